package iggyreal

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
)

// TestRestartWaitsForItsOwnListener: the listening socket of a killed
// server can outlive its process for a moment (the kernel releases an
// io_uring ring's files by deferred work) and still completes handshakes.
// Restart must not take a connection to it for the new server: it returns
// only once the new server itself listens. A listener of the test's stands
// in for the lingering socket, so the race is hit on every run.
func TestRestartWaitsForItsOwnListener(t *testing.T) {
	// Serial: it kills and restarts a server and listens on its port in between.
	srv := StartPrivate(t)
	srv.Kill()
	var stale net.Listener
	await.Until(t, 10*time.Second, func() (err error) { // the killed server's own socket may linger too
		stale, err = net.Listen("tcp", srv.Addr())
		return err
	})
	probed := make(chan struct{})
	go func() {
		if c, err := stale.Accept(); err == nil {
			c.Close()
		}
		close(probed)
	}()
	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart(context.Background()) }()
	<-probed // Restart found the port taking connections
	stale.Close()
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatalf("Restart returned, but nothing listens on %s: %v", srv.Addr(), err)
	}
	c.Close()
}
