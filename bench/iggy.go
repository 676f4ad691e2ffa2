package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// The two Iggy targets. "iggy" is the gateway binary with --backend iggy in
// front of a real Iggy server; "iggy-native" is the same kind of server
// driven by Iggy's own load generator, iggy-bench, over its TCP transport.
// Unless TargetConfig.IggyAddr names a server, each target starts a fresh
// iggy-server of its own (../shared/iggy/server, run.sh defaults: 2 shards,
// TCP on 127.0.0.1) in a private data dir and stops it at the end, so the
// two rows of a workload come from identical servers on the same machine.

// iggyServerDir is the directory with run.sh, iggy-server and iggy-bench:
// TargetConfig.IggyServerDir, else $IGGY_KAFKA_IGGY_SERVER_DIR (as for the
// tests), else ModuleDir/../shared/iggy/server. A
// missing server is ErrSkip, as a missing JVM is for the kafka target.
func (c *TargetConfig) iggyServerDir(need ...string) (string, error) {
	d := c.IggyServerDir
	if d == "" {
		d = os.Getenv(iggyreal.DirEnv)
	}
	if d == "" {
		if c.ModuleDir == "" {
			return "", fmt.Errorf("no module dir to find ../shared/iggy/server from: %w", ErrSkip)
		}
		d = filepath.Join(c.ModuleDir, "..", "shared", "iggy", "server")
	}
	for _, f := range append([]string{"run.sh", "iggy-server"}, need...) {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return "", fmt.Errorf("no real Iggy server: %s missing (see shared/iggy/server/BUILD.md): %w",
				filepath.Join(d, f), ErrSkip)
		}
	}
	return filepath.Abs(d)
}

// ownServer is the iggy-server a target started for itself; zero when
// TargetConfig.IggyAddr names a server.
type ownServer struct {
	server *iggyreal.Server
	// logf holds the server's output and stays open until stop (after the
	// server stopped): iggyreal copies the output through a pipe, and a
	// closed file would end that copy and leave the server writing into a
	// pipe nobody reads.
	logf *os.File
}

// start starts a private iggy-server from serverDir under dir/iggy-data,
// its output in dir/iggy-server.log, and gives it up to 30 s to listen.
func (o *ownServer) start(ctx context.Context, serverDir, dir string) (addr string, err error) {
	logf, err := os.Create(filepath.Join(dir, "iggy-server.log"))
	if err != nil {
		return "", err
	}
	s, err := iggyreal.Start(ctx, iggyreal.Options{Dir: serverDir, DataDir: filepath.Join(dir, "iggy-data"), Log: logf,
		KillWithParent: true})
	if err != nil {
		logf.Close()
		return "", err
	}
	o.server, o.logf = s, logf
	return s.Addr(), nil
}

// stop stops the server (if one was started) and closes its log.
func (o *ownServer) stop() {
	if o.server != nil {
		o.server.Stop(30 * time.Second)
		o.logf.Close()
	}
}

// pid is the server's process id, 0 when none was started.
func (o *ownServer) pid() int {
	if o.server == nil {
		return 0
	}
	return o.server.PID()
}

// iggyTarget is the gateway (--backend iggy) in front of a real server,
// its own unless TargetConfig.IggyAddr names one.
type iggyTarget struct {
	procTarget
	own ownServer
}

func (t *iggyTarget) Start(ctx context.Context) error {
	var err error
	if t.dir, err = t.c.targetDir(t.name); err != nil {
		return err
	}
	t.iggyAddr = t.c.IggyAddr
	if t.iggyAddr == "" {
		sd, err := t.c.iggyServerDir()
		if err != nil {
			return err
		}
		if t.iggyAddr, err = t.own.start(ctx, sd, t.dir); err != nil {
			return err
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = t.startOnce(ctx); lastErr == nil {
			return nil
		}
	}
	// Compare stops only targets that started.
	t.own.stop()
	t.own = ownServer{}
	return lastErr
}

// PIDs are the gateway's and (when started here) the server's: the row's
// server CPU is what both spent, as iggy-native's is the server's.
func (t *iggyTarget) PIDs() []int {
	pids := []int{t.PID()}
	if t.own.server != nil {
		pids = append(pids, t.own.pid())
	}
	return pids
}

// iggyServerPID is the server's process id when the target started one.
func (t *iggyTarget) iggyServerPID() int { return t.own.pid() }

func (t *iggyTarget) Stop() error {
	t.stopProcess()
	t.own.stop()
	return removeDir(t.dir)
}

// nativeTarget runs iggy-bench against a server of its own. It speaks no
// Kafka: Compare calls runNative instead of the franz-go workloads, and
// only for produce and consume.
type nativeTarget struct {
	name  string
	c     *TargetConfig
	paced bool // iggy-native-paced: runs at the iggy target's rate
	bin   string
	dir   string
	addr  string
	own   ownServer
}

// nativeRunner is a target that runs workloads with its own client.
// pace is the payload bytes per second to hold the step to (0: as fast as
// it goes); pacedBy names the target whose rate it wants (empty: none).
type nativeRunner interface {
	runNative(ctx context.Context, w Workload, maxDuration time.Duration, pace float64) *Result
	pacedBy() string
}

func (t *nativeTarget) pacedBy() string {
	if t.paced {
		return "iggy"
	}
	return ""
}

func (t *nativeTarget) Name() string      { return t.name }
func (t *nativeTarget) Brokers() []string { return []string{t.addr} }
func (t *nativeTarget) PID() int          { return t.own.pid() }

// iggyServerPID is the server's process id when the target started one.
func (t *nativeTarget) iggyServerPID() int { return t.own.pid() }

func (t *nativeTarget) Start(ctx context.Context) error {
	sd, err := t.c.iggyServerDir("iggy-bench")
	if err != nil {
		return err
	}
	t.bin = filepath.Join(sd, "iggy-bench")
	if t.dir, err = t.c.targetDir(t.name); err != nil {
		return err
	}
	if t.addr = t.c.IggyAddr; t.addr != "" {
		return nil
	}
	t.addr, err = t.own.start(ctx, sd, t.dir)
	return err
}

func (t *nativeTarget) Stop() error {
	t.own.stop()
	return removeDir(t.dir)
}

// NativeBatch is the messages per batch iggy-bench sends and polls for a
// record size: what fits in kgo's default 1 MB producer batch (the size
// the harness's producer fills per partition and request at full speed,
// with about 10 bytes of Kafka record framing each) and, on the consume
// side, about the 1 MiB per partition a Fetch asks the gateway for.
func NativeBatch(recordSize int) int {
	return max(1, 1_000_000/(recordSize+10))
}

// nativeArgs is the iggy-bench command line of one benchmark. One producer
// or consumer, one stream; a single partition uses the pinned benchmarks,
// more the balanced ones (one producer spreading batches over the
// partitions, one consumer in one consumer group reading them all).
func nativeArgs(kind string, w Workload, perBatch, batches int, addr string, reuse bool, pace float64) []string {
	var a []string
	if reuse {
		a = append(a, "--reuse-streams")
	}
	if pace > 0 {
		a = append(a, "--rate-limit", strconv.FormatInt(int64(pace), 10)+"B")
	}
	parts := max(w.Partitions, 1)
	producers := max(w.Producers, 1)
	if kind == "produce" {
		batches = nativeBatchesPerActor(batches, producers) // -b counts each producer's
	}
	a = append(a, "-m", strconv.Itoa(w.RecordSize), "-P", strconv.Itoa(perBatch), "-b", strconv.Itoa(batches))
	switch {
	case kind == "produce" && parts == 1 && producers == 1:
		a = append(a, "pinned-producer", "-p", "1", "-s", "1")
	case kind == "produce":
		a = append(a, "balanced-producer", "-a", strconv.Itoa(int(parts)), "-p", strconv.Itoa(producers), "-s", "1")
	case parts == 1:
		a = append(a, "pinned-consumer", "-c", "1", "-s", "1")
	default:
		a = append(a, "balanced-consumer-group", "-c", "1", "-g", "1", "-s", "1")
	}
	return append(a, "tcp", "--server-address", addr)
}

// nativeBatchesPerActor is batches spread over producers, rounded up.
func nativeBatchesPerActor(batches, producers int) int {
	return (batches + producers - 1) / producers
}

// runNative runs w with iggy-bench: produce as one benchmark; consume as a
// produce benchmark that loads the stream (at full speed), then a consume
// benchmark on it (--reuse-streams). The step is held to pace payload
// bytes per second when pace > 0. The records asked for are rounded up to
// whole batches.
func (t *nativeTarget) runNative(ctx context.Context, w Workload, maxDuration time.Duration, pace float64) *Result {
	perBatch := min(NativeBatch(w.RecordSize), max(w.Records, 1))
	batches := (w.Records + perBatch - 1) / perBatch
	r := &Result{Workload: w.Kind, RecordSize: w.RecordSize, Records: int64(perBatch * batches)}
	if p := max(w.Producers, 1); w.Kind == "produce" && p > 1 {
		r.Records = int64(perBatch * nativeBatchesPerActor(batches, p) * p)
	}
	if w.Kind != "produce" && w.Kind != "consume" {
		r.Err = "iggy-native runs produce and consume workloads only"
		return r
	}
	var clientCPU time.Duration
	r.PacedMBPerSec = pace / 1e6
	run := func(kind string, reuse bool, pace float64) (*nativeResult, error) {
		rctx, cancel := context.WithTimeout(ctx, maxDuration+30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(rctx, t.bin, nativeArgs(kind, w, perBatch, batches, t.addr, reuse, pace)...)
		cmd.Dir = t.dir // it may write result files next to itself
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if cmd.ProcessState != nil {
			clientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		res, perr := parseNative(out.Bytes())
		if err != nil || perr != nil {
			return nil, fmt.Errorf("iggy-bench %s: %v %v; its output:\n%s", strings.Join(cmd.Args[1:], " "),
				err, perr, tailLines(stripANSI(out.String()), 15))
		}
		return res, nil
	}
	if w.Kind == "consume" {
		if _, err := run("produce", false, 0); err != nil {
			r.Err = "preload: " + err.Error()
			return r
		}
	}
	// From quiet to quiet, as the iggy target (settle.go): the preload's
	// saving is not the step's, the step's own is.
	pids, server := targetProcesses(t)
	step := startStep(ctx, defaultSettler, pids, server >= 0)
	res, err := run(w.Kind, w.Kind == "consume", pace)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.setStepCPU(step.finish(ctx), false, server)
	r.ClientCPU = clientCPU.Seconds() // iggy-bench's, as the harness's own for the Kafka-wire targets
	r.Counted = res.messages
	r.Bytes = res.messages * int64(w.RecordSize)
	r.RecPerSec, r.MBPerSec = res.msgsPerSec, res.mbPerSec
	if r.RecPerSec > 0 {
		r.Seconds = float64(r.Counted) / r.RecPerSec
	}
	r.Latency = res.latency
	r.Complete = r.Counted == r.Records
	if !r.Complete {
		r.Err = fmt.Sprintf("iggy-bench counted %d messages, want %d", r.Counted, r.Records)
	}
	return r
}

// nativeResult is what parseNative reads from iggy-bench's summary.
type nativeResult struct {
	messages   int64
	msgsPerSec float64
	mbPerSec   float64 // 10^6 bytes of message payload per second, as the harness's MB/s
	latency    *Latency
}

var (
	ansiRE      = regexp.MustCompile("\x1b\\[[0-9;]*m")
	benchLineRE = regexp.MustCompile(`(?m)^.*Benchmark: .*?(\d+) messages, `)
	resultsRE   = regexp.MustCompile(`(?m)^(?:Producers|Consumers) Results: Total throughput: ([0-9.]+) MB/s, (\d+) messages/s, (.*)$`)
)

// parseNative reads the summary iggy-bench prints at the end of a run:
//
//	... Benchmark: Pinned Producer, ..., 200000 messages, 1000 messages per batch, ...
//	Producers Results: Total throughput: 239.44 MB/s, 2394419 messages/s, ..., p50 latency: 0.40 ms, ...
//
// Its latencies are per batch (a send or poll of one batch to its reply),
// not per record as the harness measures them.
func parseNative(out []byte) (*nativeResult, error) {
	s := stripANSI(string(out))
	m := resultsRE.FindStringSubmatch(s)
	if m == nil {
		return nil, errors.New("no \"Results: Total throughput\" line")
	}
	b := benchLineRE.FindStringSubmatch(s)
	if b == nil {
		return nil, errors.New("no \"Benchmark: ... messages\" line")
	}
	r := &nativeResult{}
	var err error
	if r.mbPerSec, err = strconv.ParseFloat(m[1], 64); err != nil {
		return nil, err
	}
	if r.msgsPerSec, err = strconv.ParseFloat(m[2], 64); err != nil {
		return nil, err
	}
	if r.messages, err = strconv.ParseInt(b[1], 10, 64); err != nil {
		return nil, err
	}
	lat := &Latency{}
	found := 0
	for _, f := range []struct {
		key string
		v   *float64
	}{{"p50 latency", &lat.P50}, {"p99 latency", &lat.P99}, {"p999 latency", &lat.P999}, {"max", &lat.Max}} {
		re := regexp.MustCompile(`(?:^|, )` + regexp.QuoteMeta(f.key) + `: ([0-9.]+) ms`)
		if lm := re.FindStringSubmatch(m[3]); lm != nil {
			if *f.v, err = strconv.ParseFloat(lm[1], 64); err == nil {
				found++
			}
		}
	}
	if found > 0 {
		r.latency = lat
	}
	return r, nil
}

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
