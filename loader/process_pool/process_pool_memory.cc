// SPDX-License-Identifier: Apache-2.0
#include "loader/process_pool/process_pool_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace stoker {

SharedMemory::SharedMemory(const char* name, size_t size) : size_(size) {
  fd_ = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) fail("cannot create shared memory '{}': {}", name, errno_text(errno));
  if (ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    close(fd_);
    fail("cannot size shared memory '{}' to {} bytes: {}", name, size, errno_text(e));
  }
  data_ = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (data_ == MAP_FAILED) {
    const int e = errno;
    close(fd_);
    fail("cannot map {} bytes of shared memory '{}': {}", size, name, errno_text(e));
  }
  // fallocate reports a shortage as an error here, where a bare touch would be a SIGBUS.
  if (fallocate(fd_, 0, 0, static_cast<off_t>(size)) != 0 && errno != EOPNOTSUPP) {
    const int e = errno;
    munmap(data_, size);
    close(fd_);
    fail("cannot allocate {} bytes of shared memory '{}': {}", size, name, errno_text(e));
  }
  std::memset(data_, 0, size);
}

SharedMemory::~SharedMemory() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

void SharedMemory::seal() {
  munmap(data_, size_);  // F_SEAL_WRITE refuses while a writable mapping exists
  data_ = nullptr;
  const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
  STOKER_CHECK_MSG(fcntl(fd_, F_ADD_SEALS, seals) == 0, "{}", errno_text(errno));
}

void* map_shared(int fd, bool writable, size_t& size, const char* what) {
  struct stat st {};
  if (fstat(fd, &st) != 0) fail("{} (fd {}): {}", what, fd, errno_text(errno));
  size = static_cast<size_t>(st.st_size);
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* p = mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail("cannot map {} ({} bytes): {}", what, size, errno_text(errno));
  return p;
}

}  // namespace stoker
