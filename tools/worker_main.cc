// SPDX-License-Identifier: Apache-2.0
// stoker-worker: the decode worker process of processes:N (placeholder).
int main() {
  return 2;
}
