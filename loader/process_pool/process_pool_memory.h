// SPDX-License-Identifier: Apache-2.0
// Shared memory for processes:N: memfds, which have no name in any file system, so nothing is
// ever left in /dev/shm (kill -9 included); the memory lives while a process holds the fd or
// a mapping. Used for the batch tensors (read-write, in every worker) and the index (written
// once by the parent, then sealed so workers can only read it).
#pragma once

#include <cstddef>

namespace stoker {

class SharedMemory {
 public:
  // `size` zero bytes, mapped read-write and touched: resident memory is flat from here on.
  // `name` shows in /proc/PID/maps. Throws stoker::Error when memory is short.
  SharedMemory(const char* name, size_t size);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  int fd() const { return fd_; }
  void* data() const { return data_; }
  size_t size() const { return size_; }
  // Unmaps and seals the contents against any change (for memory written once).
  void seal();

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Maps all of a memfd received from the parent (worker side); sets `size`. Throws naming `what`.
void* map_shared(int fd, bool writable, size_t& size, const char* what);

}  // namespace stoker
