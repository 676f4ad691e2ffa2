package e2e

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
)

// faultProxy sits between Kafka clients and the gateway. Every Nth Produce
// request it forwards whole, then cuts the client's connection at once (so
// that request's response, and those of the requests in flight before it,
// are lost) and the gateway's connection a moment later (so the gateway
// reads and stores the request). The producer then retries batches the
// gateway already stored, on a new connection.
type faultProxy struct {
	t        testing.TB
	ln       net.Listener
	upstream atomic.Pointer[string]
	every    int64

	produces atomic.Int64
	cuts     atomic.Int64

	// pauseOnCut: at the next cut, stop connecting new clients upstream
	// (they wait) and send on paused once the gateway had time to store
	// the request, so the test can restart the gateway before any retry
	// of that request reaches it.
	pauseOnCut atomic.Bool
	paused     chan struct{}

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newFaultProxy(t testing.TB, every int64) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, every: every, conns: make(map[net.Conn]struct{}), paused: make(chan struct{}, 1)}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

func (p *faultProxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// SetUpstream points new connections at addr.
func (p *faultProxy) SetUpstream(addr string) { p.upstream.Store(&addr) }

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *faultProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *faultProxy) serve(client net.Conn) {
	p.track(client)
	// While the gateway restarts, hold the client and keep dialling, as a
	// slow broker would look.
	var server net.Conn
	if err := await.Poll(20*time.Second, 20*time.Millisecond, func() (err error) {
		up := p.upstream.Load()
		if up == nil {
			return errors.New("no upstream")
		}
		server, err = net.DialTimeout("tcp", *up, 2*time.Second)
		return err
	}); err != nil {
		_ = client.Close()
		return
	}
	p.track(server)
	go func() {
		_, _ = io.Copy(client, server)
		_ = client.Close()
	}()
	defer func() { _ = client.Close() }()
	var size [4]byte
	for {
		if _, err := io.ReadFull(client, size[:]); err != nil {
			_ = server.Close()
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(client, frame[4:]); err != nil {
			_ = server.Close()
			return
		}
		if _, err := server.Write(frame); err != nil {
			return
		}
		// Every Nth Produce is cut; once pauseOnCut is set, the very next one
		// is, so a test waiting for that cut cannot run out of requests.
		if n >= 2 && binary.BigEndian.Uint16(frame[4:]) == 0 && (p.produces.Add(1)%p.every == 0 || p.pauseOnCut.Load()) {
			p.cuts.Add(1)
			_ = client.Close()
			if p.pauseOnCut.CompareAndSwap(true, false) {
				p.upstream.Store(nil)
				// The proxy cannot see the gateway store the request: it
				// gives it a moment before cutting the gateway's side.
				time.Sleep(300 * time.Millisecond)
				_ = server.Close()
				p.paused <- struct{}{}
				return
			}
			time.AfterFunc(200*time.Millisecond, func() { _ = server.Close() })
			return
		}
	}
}

// proxiedGateway is a gateway binary on dir behind a faultProxy that it
// advertises, so clients keep one address while the process behind it is
// killed and replaced.
type proxiedGateway struct {
	t     *testing.T
	proxy *faultProxy
	dir   string
	args  []string
	cur   *process
}

// newProxiedGateway starts the gateway binary with args on dir behind a
// proxy that cuts every cutEvery-th Produce (1<<62: never).
func newProxiedGateway(t *testing.T, cutEvery int64, dir string, args ...string) *proxiedGateway {
	t.Helper()
	g := &proxiedGateway{t: t, proxy: newFaultProxy(t, cutEvery), dir: dir}
	g.args = append(args, "--advertised-port="+strconv.Itoa(g.proxy.Port()))
	g.start()
	return g
}

func (g *proxiedGateway) start() {
	g.cur = spawnGateway(g.t, g.dir, g.args...)
	g.proxy.SetUpstream(g.cur.Addr)
}

// killAndRestart kills the gateway process (-9) and starts a new one on
// the same data.
func (g *proxiedGateway) killAndRestart() {
	g.cur.Kill()
	g.start()
}

// createTopic creates topic with parts partitions straight on the gateway.
func (g *proxiedGateway) createTopic(topic string, parts int32) {
	g.t.Helper()
	cl := newClient(g.t, g.cur.Addr)
	createTopic(g.t, cl, topic, parts)
	cl.Close()
}
