package loop

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// findEpoll finds, through /proc, the epoll instance that watches an fd
// with the fd as its event data, and refuses one that keeps other data
// there (which muting would overwrite) or an fd no epoll watches.
func TestFindEpoll(t *testing.T) {
	t.Parallel()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Skipf("no epoll here: %v", err)
	}
	defer unix.Close(epfd)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	watch := func(op, data int) {
		t.Helper()
		if err := unix.EpollCtl(epfd, op, p[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(data)}); err != nil {
			t.Fatal(err)
		}
	}
	watch(unix.EPOLL_CTL_ADD, p[0])
	if got, err := findEpoll(p[0]); err != nil || got != epfd {
		t.Fatalf("findEpoll(%d) = %d, %v; want %d", p[0], got, err, epfd)
	}
	watch(unix.EPOLL_CTL_MOD, p[0]+1000)
	if _, err := findEpoll(p[0]); !errors.Is(err, errNotMutable) {
		t.Fatalf("other event data: %v, want errNotMutable", err)
	}
	if _, err := findEpoll(p[1]); !errors.Is(err, errNotMutable) {
		t.Fatalf("an fd no epoll watches: %v, want errNotMutable", err)
	}
}
