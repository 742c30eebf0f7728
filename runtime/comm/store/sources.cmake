# Stores and rendezvous (paths relative to runtime/comm).
list(APPEND DISTLAB_COMM_SOURCES
  store/kv_state.cpp
  store/hash_store.cpp
  store/file_store.cpp
  store/prefix_store.cpp
  store/socket.cpp
  store/tcp_store_protocol.cpp
  store/tcp_store_server_state.cpp
  store/tcp_store_server_client.cpp
  store/tcp_store_server.cpp
  store/tcp_store_server_io.cpp
  store/tcp_store_client.cpp
  store/tcp_store.cpp
  store/rendezvous.cpp)
