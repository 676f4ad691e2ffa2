package e2e

// A store failure is an answer, never a hang (docs/STORAGE.md, "When the
// disk fills or fails"): the gateway binary on a full disk, and in front of
// an Iggy server that is stopped (SIGSTOP: hung) and then killed
// (unreachable). Clients get retriable Kafka errors within a deadline,
// Metadata and ApiVersions still answer, SIGTERM exits within the drain
// timeout, and every acknowledged record is there afterwards.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// needTmpfs mounts a tmpfs of size on a fresh directory (unmounted at
// cleanup). It skips when not root or mount fails, and fails instead under
// IGGY_KAFKA_E2E_REQUIRED=1 (CI runs as root).
func needTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "root", "run as root (mounts a tmpfs to fill)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		missing(t, "tmpfs mount", fmt.Sprintf("mount -t tmpfs failed: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// healthz fetches the metrics listener's /healthz: status code and body.
func healthz(t testing.TB, addr string) (int, string) {
	t.Helper()
	code, body, err := httpStatus("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	return code, body
}

// metricsText fetches /metrics.
func metricsText(t testing.TB, addr string) string {
	t.Helper()
	_, body, err := httpStatus("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return body
}

// answersAdmin checks that ApiVersions and a Metadata of topic answer
// within limit.
func answersAdmin(t testing.TB, cl *kgo.Client, topic string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatalf("ApiVersions: %v after %v", err, time.Since(start))
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v after %v", err, time.Since(start))
	}
	if len(resp.Brokers) != 1 || len(resp.Topics) != 1 {
		t.Fatalf("Metadata: %d brokers, %d topics", len(resp.Brokers), len(resp.Topics))
	}
}

// TestDiskFullAnswersStorageError fills the embedded store's disk (a 16 MiB
// tmpfs) with acks=all produces.
func TestDiskFullAnswersStorageError(t *testing.T) {
	// Serial: times the refusals (within a second) on a tmpfs it mounts.
	if iggyBackend() {
		t.Skipf("embedded store only; this pass is %s=%s", backendEnv, os.Getenv(backendEnv))
	}
	mnt := needTmpfs(t, "16m")
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 6<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(mnt, "data")
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	const drain = 5 * time.Second
	gw := spawnGateway(t, dataDir, "--metrics-addr="+metricsAddr, "--shutdown-drain-timeout-secs=5")
	cl := newClient(t, gw.Addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.RecordRetries(0), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(1<<20))
	const topic = "full"
	createTopic(t, cl, topic, 1)

	value := func(i int) []byte {
		v := bytes.Repeat([]byte{'v'}, 32<<10)
		copy(v, fmt.Sprintf("rec-%08d", i))
		return v
	}
	acked := map[int64]int{} // offset -> record number
	produce := func(from, n int) (time.Duration, error) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: value(from + i)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res := cl.ProduceSync(ctx, recs...)
		took := time.Since(start)
		for i, r := range res {
			if r.Err == nil {
				acked[r.Record.Offset] = from + i
			}
		}
		return took, res.FirstErr()
	}

	next := 0
	var firstErr error
	for round := 0; round < 200 && firstErr == nil; round++ {
		took, err := produce(next, 16)
		next += 16
		if err != nil {
			firstErr = err
			if took > time.Second {
				t.Errorf("first failing produce answered after %v, want within a second", took)
			}
		}
	}
	if firstErr == nil {
		t.Fatalf("the disk never filled (%d records acknowledged)", len(acked))
	}
	if !errors.Is(firstErr, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", firstErr)
	}
	t.Logf("disk full after %d acknowledged records: %v", len(acked), firstErr)

	// Refused at once while full; the gateway is up and answers admin keys.
	took, err := produce(next, 1)
	next++
	if !errors.Is(err, kerr.KafkaStorageError) || took > time.Second {
		t.Fatalf("produce while full: %v after %v", err, took)
	}
	answersAdmin(t, cl, topic, 5*time.Second)
	if code, body := healthz(t, metricsAddr); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk full") {
		t.Fatalf("/healthz while full: %d %q", code, body)
	}
	if m := metricsText(t, metricsAddr); !strings.Contains(m, "iggy_kafka_store_state 1") {
		t.Fatalf("/metrics while full lacks iggy_kafka_store_state 1")
	}

	// Free space: the store serves writes again by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 15*time.Second, func() error {
		if code, body := healthz(t, metricsAddr); code != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", code, body)
		}
		return nil
	})
	if _, err := produce(next, 4); err != nil {
		t.Fatalf("produce after space was freed: %v", err)
	}
	stopWithin(t, gw, drain+3*time.Second)

	// Every acknowledged record is there after a restart (on a bigger
	// disk: replaying the WAL writes it out again).
	big := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", dataDir, big).CombinedOutput(); err != nil {
		t.Fatalf("copy data: %v: %s", err, out)
	}
	gw2 := spawnGateway(t, big)
	cl2 := newClient(t, gw2.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(8<<20))
	seen := map[int64]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for missingAcks(acked, seen) > 0 && ctx.Err() == nil {
		fs := cl2.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if i, ok := acked[r.Offset]; ok {
				if want := value(i); !bytes.Equal(r.Value, want) {
					t.Fatalf("offset %d holds %q, want record %d", r.Offset, r.Value[:12], i)
				}
				seen[r.Offset] = true
			}
		})
	}
	if n := missingAcks(acked, seen); n > 0 {
		t.Fatalf("%d of %d acknowledged records missing after restart", n, len(acked))
	}
	gw2.Stop()
}

func missingAcks(acked map[int64]int, seen map[int64]bool) int {
	n := 0
	for off := range acked {
		if !seen[off] {
			n++
		}
	}
	return n
}

// TestIggyHungAnswers runs the gateway on a private real Iggy server that
// is stopped (SIGSTOP) mid-run, resumed, and then killed.
func TestIggyHungAnswers(t *testing.T) {
	// Serial: times the answers against the call timeout, and restarts its Iggy server on the same port.
	realServerTest(t)
	srv := iggyreal.StartPrivate(t)
	// Long enough for the login at startup on a loaded machine (2s was
	// not), short enough to keep the test quick.
	const callTimeout = 4 * time.Second
	const drain = time.Second
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	gw := spawnGateway(t, t.TempDir(), "--backend=iggy", "--iggy-addr="+srv.Addr(),
		"--stream="+iggyreal.Stream(t), "--iggy-state-stream="+iggyreal.Stream(t),
		"--iggy-call-timeout-ms="+strconv.Itoa(int(callTimeout/time.Millisecond)), "--shutdown-drain-timeout-secs=1", "--metrics-addr="+metricsAddr)
	cl := newClient(t, gw.Addr)
	const topic = "hung"
	createTopic(t, cl, topic, 1)
	// Produce goes out raw (acks=all) so the Kafka error code is seen as
	// the gateway sent it, not after franz-go's retry handling.
	id := topicIDOf(t, cl, topic) // kgo sends Produce v13, which names topics by id
	produce := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		req := produceReq(topic, recordBatch(-1, 0, "x"))
		req.Topics[0].TopicID = id
		resp, err := req.RequestWith(ctx, cl)
		took := time.Since(start)
		if err != nil {
			return took, err
		}
		return took, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if _, err := produce(); err != nil {
		t.Fatalf("produce before the fault: %v", err)
	}
	retriable := func(what string, took time.Duration, err error) {
		t.Helper()
		var ke *kerr.Error
		if !errors.As(err, &ke) || !ke.Retriable {
			t.Fatalf("produce with Iggy %s: %v, want a retriable Kafka error", what, err)
		}
		if took > callTimeout+time.Second {
			t.Fatalf("produce with Iggy %s answered after %v, want within the %v call timeout", what, took, callTimeout)
		}
		t.Logf("produce with Iggy %s: %v after %v", what, err, took.Round(time.Millisecond))
	}

	// Hung: the server process stopped, its sockets open.
	if err := syscall.Kill(srv.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	took, err := produce()
	retriable("stopped", took, err)
	answersAdmin(t, cl, topic, callTimeout+time.Second)
	if code, body := healthz(t, metricsAddr); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz with Iggy stopped: %d %q", code, body)
	}
	if err := syscall.Kill(srv.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 20*time.Second, func() error { _, err := produce(); return err })
	if code, body := healthz(t, metricsAddr); code != http.StatusOK {
		t.Fatalf("/healthz with Iggy back: %d %q", code, body)
	}

	// Unreachable: the server killed, then back.
	srv.Kill()
	took, err = produce()
	retriable("killed", took, err)
	answersAdmin(t, cl, topic, callTimeout+time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 30*time.Second, func() error { _, err := produce(); return err })

	// SIGTERM while the server hangs and a produce waits on it: the drain
	// timeout (1s, shorter than the call timeout) bounds the exit.
	if err := syscall.Kill(srv.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(srv.PID(), syscall.SIGCONT) }()
	inflight := make(chan error, 1)
	go func() { _, err := produce(); inflight <- err }()
	// A moment for the produce to reach the gateway and wait on the hung
	// server (nothing outside shows that it does).
	time.Sleep(200 * time.Millisecond)
	stopWithin(t, gw, drain+3*time.Second)
	<-inflight
}
