package etcdtest

import "syscall"

// sysProcAttr has the kernel kill etcd when the test process dies, so a
// killed test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
