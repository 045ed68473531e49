// SPDX-License-Identifier: Apache-2.0
// peer_liveness (train/parallel): what a rank waiting after a signal learns about another
// process, checked against real processes: this one, a child that runs, the same child
// killed (a zombie, then reaped), a pid whose start time is not the one recorded (reused), and
// processes it cannot look at (another machine, another PID namespace).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "train/parallel/peer_liveness.h"

namespace stoker {
namespace {

// A child that waits to be killed, and its ProcessId as it sees itself (through a pipe).
struct Child {
  pid_t pid = 0;
  ProcessId id;
};

Child start_child() {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    const ProcessId self = this_process();
    if (::write(fds[1], &self, sizeof(self)) != ssize_t(sizeof(self))) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(fds[1]);
  EXPECT_EQ(::read(fds[0], &c.id, sizeof(c.id)), ssize_t(sizeof(c.id)));
  ::close(fds[0]);
  return c;
}

TEST(PeerLiveness, ThisProcessIsAlive) {
  const ProcessId self = this_process();
  ASSERT_NE(self.boot_id[0], '\0');
  ASSERT_NE(self.pid_ns, 0u);
  ASSERT_NE(self.start_ticks, 0u);
  EXPECT_EQ(self.pid, int64_t(::getpid()));
  EXPECT_EQ(liveness(self, self), Liveness::alive);
}

TEST(PeerLiveness, AChildRunsThenEnds) {
  const ProcessId self = this_process();
  Child c = start_child();
  EXPECT_EQ(c.id.pid, int64_t(c.pid));
  EXPECT_EQ(liveness(c.id, self), Liveness::alive);
  ASSERT_EQ(::kill(c.pid, SIGKILL), 0);
  // Not reaped yet: a zombie, which has ended (mpirun's daemon reaps its ranks a moment later).
  for (int k = 0; k < 500 && liveness(c.id, self) == Liveness::alive; ++k) ::usleep(1000);
  EXPECT_EQ(liveness(c.id, self), Liveness::ended);
  int status = 0;
  ASSERT_EQ(::waitpid(c.pid, &status, 0), c.pid);
  EXPECT_EQ(liveness(c.id, self), Liveness::ended);  // gone from /proc
}

TEST(PeerLiveness, AReusedPidIsAnotherProcess) {
  const ProcessId self = this_process();
  ProcessId other = self;  // this pid, as if an earlier process had had it
  other.start_ticks = self.start_ticks - 1;
  EXPECT_EQ(liveness(other, self), Liveness::ended);
}

TEST(PeerLiveness, AnotherMachineOrNamespaceCannotBeLookedAt) {
  const ProcessId self = this_process();
  ProcessId elsewhere = self;
  elsewhere.boot_id[0] = elsewhere.boot_id[0] == 'x' ? 'y' : 'x';
  EXPECT_EQ(liveness(elsewhere, self), Liveness::unknown);
  ProcessId other_ns = self;
  other_ns.pid_ns = self.pid_ns + 1;
  EXPECT_EQ(liveness(other_ns, self), Liveness::unknown);
  ProcessId unread;  // a process that could not read its own /proc
  EXPECT_EQ(liveness(self, unread), Liveness::unknown);
}

}  // namespace
}  // namespace stoker
