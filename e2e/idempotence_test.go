package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
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
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		if up := p.upstream.Load(); up != nil {
			if server, err = net.DialTimeout("tcp", *up, 2*time.Second); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = client.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
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

// idemRecords are n records, record i on partition i%parts with value
// "v-<i>", so each partition's values must read back in increasing i.
func idemRecords(topic string, n, parts int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: []byte("k"), Value: fmt.Appendf(nil, "v-%d", i)}
	}
	return out
}

// checkExactlyOnce consumes topic through addr and fails unless every
// partition holds exactly its records, each once, in produce order.
func checkExactlyOnce(t *testing.T, addr, topic string, n, parts int) {
	t.Helper()
	got := consumeN(t, addr, topic, n, 60*time.Second)
	// consumeN stops at n; make sure nothing more is stored.
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(300*time.Millisecond))
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		total += fs.NumRecords()
	}
	if total != n || len(got) != n {
		t.Fatalf("%d records stored (first read %d), want exactly %d", total, len(got), n)
	}
	next := make([]int, parts)
	for i := range next {
		next[i] = i
	}
	for _, r := range got {
		want := fmt.Sprintf("v-%d", next[r.Partition])
		if r.Value != want {
			t.Fatalf("partition %d offset %d: %q, want %q (duplicate or reordering)", r.Partition, r.Offset, r.Value, want)
		}
		next[r.Partition] += parts
	}
}

// produceKgo runs a kgo idempotent producer (its default) through
// addr and returns once every record was acknowledged; during, if set, runs
// once a third of the records were acknowledged.
func produceKgo(t *testing.T, addr string, records []*kgo.Record, during func()) {
	t.Helper()
	cl := newClient(t, addr,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2048), // many small batches, several in flight
		kgo.ProducerLinger(time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ProduceRequestTimeout(10*time.Second),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	var acked atomic.Int64
	third := int64(len(records) / 3)
	reached := make(chan struct{})
	for _, r := range records {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			if acked.Add(1) == third {
				close(reached)
			}
			wg.Done()
		})
	}
	if during != nil {
		<-reached // mid-run, with batches still in flight
		during()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		t.Fatalf("produce: %v", *p)
	}
}

func TestIdempotentKgoThroughFaultyProxy(t *testing.T) {
	proxy := newFaultProxy(t, 7)
	gw := startGateway(t, func(h *handlers.Config, _ *loop.Config) { h.AdvertisedPort = int32(proxy.Port()) })
	proxy.SetUpstream(gw.Addr)
	const n, parts = 3000, 2
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, "idem-kgo", parts)
	produceKgo(t, proxy.Addr(), idemRecords("idem-kgo", n, parts), nil)
	if proxy.cuts.Load() < 3 {
		t.Fatalf("only %d connections cut over %d produce requests: the test did not exercise retries", proxy.cuts.Load(), proxy.produces.Load())
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-kgo", n, parts)
}

// A gateway restart (SIGKILL, then a new process on the same data) in the
// middle of a faulty run: retries that reach the new process are still
// recognised, from the message ids it finds in the store.
func TestIdempotentKgoAcrossGatewayRestart(t *testing.T) {
	proxy := newFaultProxy(t, 11)
	dir := t.TempDir()
	adv := "--advertised-port=" + strconv.Itoa(proxy.Port())
	gw := spawnGateway(t, dir, adv)
	proxy.SetUpstream(gw.Addr)
	const n, parts = 3000, 2
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, "idem-restart", parts)
	cl.Close()
	var second *process
	produceKgo(t, proxy.Addr(), idemRecords("idem-restart", n, parts), func() {
		proxy.pauseOnCut.Store(true)
		select {
		case <-proxy.paused:
		case <-time.After(30 * time.Second):
			t.Fatal("no produce request was cut")
		}
		// The cut request was stored but not acknowledged; its retry
		// reaches only the new process.
		gw.Kill()
		second = spawnGateway(t, dir, adv)
		proxy.SetUpstream(second.Addr)
	})
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-restart", n, parts)
	if !strings.Contains(second.Log(), "verdict=duplicate") {
		t.Errorf("the restarted gateway saw no duplicate batch: the retry path after a restart was not exercised")
	}
}

// javaIdemProducer sends n records, record i to partition i%parts with
// value v-<i>, with the Java client's idempotent producer, and prints OK
// or the first failure.
const javaIdemProducer = `
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class IdemProducer {
  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a[0]);
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("max.in.flight.requests.per.connection", "5");
    p.put("batch.size", "1024");
    p.put("linger.ms", "1");
    p.put("retry.backoff.ms", "50");
    p.put("reconnect.backoff.ms", "50");
    p.put("request.timeout.ms", "10000");
    p.put("delivery.timeout.ms", "120000");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    String topic = a[1];
    int n = Integer.parseInt(a[2]), parts = Integer.parseInt(a[3]);
    AtomicReference<Exception> failed = new AtomicReference<>();
    try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++) {
        pr.send(new ProducerRecord<>(topic, i % parts, "k", "v-" + i), (md, e) -> { if (e != null) failed.compareAndSet(null, e); });
      }
      pr.flush();
    }
    System.out.println(failed.get() == null ? "OK" : "FAILED " + failed.get());
  }
}
`

// javaIdem compiles the Java producer and returns a function that runs it
// against addr, failing t unless it reports OK.
func javaIdem(t *testing.T) func(addr, topic string, n, parts int) {
	t.Helper()
	java, cp := needJava(t)
	javac, err := exec.LookPath("javac")
	if err != nil {
		missing(t, "javac", "install a JDK 17+: apt-get install openjdk-17-jdk-headless")
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "IdemProducer.java"), []byte(javaIdemProducer), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runCmd(t, 120*time.Second, "", javac, "-cp", cp, "-d", src, filepath.Join(src, "IdemProducer.java")); err != nil {
		t.Fatalf("javac: %v\n%s", err, errOut)
	}
	return func(addr, topic string, n, parts int) {
		out, errOut, err := runCmd(t, 180*time.Second, "", java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", cp+string(os.PathListSeparator)+src, "IdemProducer", addr, topic, strconv.Itoa(n), strconv.Itoa(parts))
		if err != nil || strings.TrimSpace(out) != "OK" {
			t.Errorf("java producer: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 60))
		}
	}
}

func TestIdempotentJavaThroughFaultyProxy(t *testing.T) {
	run := javaIdem(t)
	proxy := newFaultProxy(t, 5)
	gw := startGateway(t, func(h *handlers.Config, _ *loop.Config) { h.AdvertisedPort = int32(proxy.Port()) })
	proxy.SetUpstream(gw.Addr)
	const n, parts = 3000, 2
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, "idem-java", parts)
	run(proxy.Addr(), "idem-java", n, parts)
	if t.Failed() {
		t.FailNow()
	}
	if proxy.cuts.Load() < 3 {
		t.Fatalf("only %d connections cut over %d produce requests", proxy.cuts.Load(), proxy.produces.Load())
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-java", n, parts)
}

// The Java producer across a gateway restart right after a cut request.
func TestIdempotentJavaAcrossGatewayRestart(t *testing.T) {
	run := javaIdem(t)
	proxy := newFaultProxy(t, 9)
	dir := t.TempDir()
	adv := "--advertised-port=" + strconv.Itoa(proxy.Port())
	gw := spawnGateway(t, dir, adv)
	proxy.SetUpstream(gw.Addr)
	const n, parts = 20000, 2
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, "idem-java-restart", parts)
	cl.Close()
	proxy.pauseOnCut.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(proxy.Addr(), "idem-java-restart", n, parts)
	}()
	var second *process
	select {
	case <-proxy.paused:
		gw.Kill()
		second = spawnGateway(t, dir, adv)
		proxy.SetUpstream(second.Addr)
	case <-done:
		t.Fatal("the producer finished before any request was cut")
	case <-time.After(60 * time.Second):
		t.Fatal("no produce request was cut")
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-java-restart", n, parts)
	if !strings.Contains(second.Log(), "verdict=duplicate") {
		t.Errorf("the restarted gateway saw no duplicate batch: the retry path after a restart was not exercised")
	}
}
