package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/loop"
)

// Target is a Kafka-wire server the harness starts on 127.0.0.1, runs
// workloads against and stops.
type Target interface {
	Name() string
	Start(ctx context.Context) error
	Brokers() []string
	// PID is the server's process id, or 0 when it runs in this process
	// (its CPU time is then not separable from the client's).
	PID() int
	Stop() error
}

// TargetNames lists what NewTarget accepts.
var TargetNames = []string{
	"gateway",         // the gateway binary built from this tree, embedded store, --fsync never
	"gateway-always",  // the same with --fsync always (the command's default)
	"gateway-tls",     // the gateway binary, --fsync never, one SSL listener (TLS 1.3, certificates made by the harness)
	"gateway-inproc",  // the gateway in this process (gateway.Start), embedded store, --fsync never
	"kfake",           // franz-go kfake, in-memory storage
	"kfake-blackhole", // kfake acknowledging produce without storing it
	"kfake-disk",      // kfake persisting to a data dir (no per-batch fsync)
	"kafka",           // Apache Kafka 4.x, single KRaft node, from bench/kafka/target/lib
	"iggy",            // the gateway binary with --backend iggy --fsync never, in front of a real Iggy server (its own, or IggyAddr)
	"iggy-native",     // iggy-bench (Iggy's own TCP client) against a real Iggy server (its own, or IggyAddr)
	// iggy-bench as iggy-native, each run held (--rate-limit) to the MB/s the iggy target reached on the
	// same workload just before (list iggy first): the server's CPU per record at the gateway's feed rate.
	"iggy-native-paced",
}

// TargetConfig says where the targets' programs are and how to run them.
type TargetConfig struct {
	ModuleDir  string // module root; for building the gateway and finding bench/kafka
	GatewayBin string // prebuilt gateway binary; built from ModuleDir when empty
	KafkaLib   string // directory of the Kafka broker jars; default ModuleDir/bench/kafka/target/lib
	Java       string // java binary; default "java" on PATH
	ToolsLib   string // kafka-tools and its dependencies for the perf workloads; default: see perfTools
	KafkaHeap  string // -Xmx/-Xms of the broker; default 1g (as kafka-server-start.sh)
	IggyAddr   string // Iggy server for the iggy targets; empty: each starts its own from IggyServerDir
	// IggyServerDir holds run.sh, iggy-server and iggy-bench; default
	// $IGGY_KAFKA_IGGY_SERVER_DIR, else ModuleDir/../shared/iggy/server.
	IggyServerDir string
	IggyArgs      []string // extra gateway flags for the iggy target (credentials, transport)
	GatewayArgs   []string // extra flags for every target running the gateway binary
	SelfExe       string   // this harness's binary, re-run as `serve-kfake`; empty runs kfake in this process
	PprofAddr     string   // if set, the gateway binary serves pprof here
	// PprofTarget names the one target whose gateway gets --pprof-addr
	// (two on one address would collide); empty: any "gateway" kind.
	PprofTarget string
	// Transactions starts the gateway targets with --transactions
	// enabled (Compare sets it for transactional workloads).
	Transactions bool
	WorkDir      string // temp files; default os.MkdirTemp
	Log          io.Writer
}

// ErrSkip marks a target that cannot run on this machine (Java or jars
// missing); compare reports it and goes on.
var ErrSkip = errors.New("skipped")

// NewTarget returns the named target; Start does the work.
func NewTarget(name string, c *TargetConfig) (Target, error) {
	switch name {
	case "gateway":
		return &procTarget{name: name, c: c, kind: "gateway", fsync: "never"}, nil
	case "gateway-always":
		return &procTarget{name: name, c: c, kind: "gateway", fsync: "always"}, nil
	case "gateway-tls":
		return &procTarget{name: name, c: c, kind: "gateway", fsync: "never", tls: true}, nil
	case "gateway-inproc":
		return &inprocGateway{name: name, fsync: "never", txn: c.Transactions}, nil
	case "kfake", "kfake-blackhole", "kfake-disk":
		mode := strings.TrimPrefix(strings.TrimPrefix(name, "kfake"), "-")
		if mode == "" {
			mode = "memory"
		}
		if c.SelfExe == "" {
			return &inprocKfake{name: name, mode: mode, c: c}, nil
		}
		return &procTarget{name: name, c: c, kind: "kfake", mode: mode}, nil
	case "kafka":
		return &procTarget{name: name, c: c, kind: "kafka"}, nil
	case "iggy":
		// --fsync never leaves the topic at the server's default durability
		// (bridge/iggy DurabilityFor), the one iggy-bench's topics get.
		return &iggyTarget{procTarget: procTarget{name: name, c: c, kind: "iggy", fsync: "never"}}, nil
	case "iggy-native":
		return &nativeTarget{name: name, c: c}, nil
	case "iggy-native-paced":
		return &nativeTarget{name: name, c: c, paced: true}, nil
	}
	return nil, fmt.Errorf("unknown target %q (one of %s)", name, strings.Join(TargetNames, ", "))
}

// waitReady polls addr with an ApiVersions round trip until it answers.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}, dial ...kgo.Opt) error {
	for {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("iggy-kafka-bench-ready")}, dial...)...)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = cl.Ping(pctx)
			cancel()
			cl.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w (last: %v)", addr, ctx.Err(), err)
		case <-exited:
			return errors.New("the process exited before it answered")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// procTarget is a server in a child process: the gateway binary, kfake
// (this harness re-run as serve-kfake) or the Kafka broker.
type procTarget struct {
	name, kind, fsync, mode string
	iggyAddr                string // kind iggy: the server the gateway fronts
	tls                     bool   // kind gateway: an SSL listener instead of PLAINTEXT
	tlsClient               *tls.Config
	caFile                  string
	c                       *TargetConfig
	addr                    string
	dir                     string
	cmd                     *exec.Cmd
	logf                    *os.File
	exited                  chan struct{}
}

func (t *procTarget) Name() string      { return t.name }
func (t *procTarget) Brokers() []string { return []string{t.addr} }
func (t *procTarget) PID() int {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0
	}
	return t.cmd.Process.Pid
}

// targetDir makes the temp dir of the target named name under WorkDir.
func (c *TargetConfig) targetDir(name string) (string, error) {
	return os.MkdirTemp(c.WorkDir, "bench-"+name+"-")
}

// removeDir removes a target's temp dir, if it made one.
func removeDir(dir string) error {
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}

func (t *procTarget) Start(ctx context.Context) error {
	var err error
	if t.dir, err = t.c.targetDir(t.name); err != nil {
		return err
	}
	if t.tls {
		if err := t.makeCerts(); err != nil {
			return err
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = t.startOnce(ctx); lastErr == nil || errors.Is(lastErr, ErrSkip) {
			return lastErr
		}
	}
	return lastErr
}

func (t *procTarget) startOnce(ctx context.Context) error {
	port, err := iggyreal.FreePort() // another process may take it first: Start retries
	if err != nil {
		return err
	}
	t.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var argv []string
	var env []string
	wait := 30 * time.Second
	switch t.kind {
	case "gateway", "iggy":
		bin, err := t.c.gatewayBinary(ctx)
		if err != nil {
			return err
		}
		data := filepath.Join(t.dir, "data")
		listen := []string{"--bind-addr", t.addr}
		if t.tls {
			certs := filepath.Join(t.dir, "certs")
			listen = []string{"--listeners", "SSL://" + t.addr,
				"--tls-cert-file", filepath.Join(certs, "server-127.0.0.1.pem"),
				"--tls-key-file", filepath.Join(certs, "server-127.0.0.1-key.pem")}
		}
		argv = append(append([]string{bin}, listen...), "--data-dir", data, "--fsync", t.fsync, "--log-level", "warn",
			// Every bench client connects from 127.0.0.1: raise the
			// per-address cap (256) so the idle workload's 1000
			// connections are admitted.
			"--max-connections", "4096", "--max-connections-per-addr", "4096")
		if t.c.PprofAddr != "" && (t.c.PprofTarget == t.name || t.c.PprofTarget == "" && t.kind == "gateway") {
			argv = append(argv, "--pprof-addr", t.c.PprofAddr)
		}
		if t.c.Transactions {
			argv = append(argv, "--transactions", "enabled")
		}
		argv = append(argv, t.c.GatewayArgs...)
		if t.kind == "iggy" {
			argv = append(argv, "--backend", "iggy", "--iggy-addr", t.iggyAddr)
			argv = append(argv, t.c.IggyArgs...)
		}
		// The gateway reads IGGY_KAFKA_* and refuses unknown ones; a
		// stray variable from the caller's shell must not change the run.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "IGGY_KAFKA_") {
				env = append(env, kv)
			}
		}
	case "kfake":
		argv = []string{t.c.SelfExe, "serve-kfake", "--addr", t.addr, "--mode", t.mode, "--data-dir", filepath.Join(t.dir, "data")}
	case "kafka":
		argv, err = t.kafkaCommand(ctx, port)
		if err != nil {
			return err
		}
		wait = 90 * time.Second
	}
	if t.logf, err = os.Create(filepath.Join(t.dir, "server.log")); err != nil {
		return err
	}
	t.cmd = exec.Command(argv[0], argv[1:]...)
	t.cmd.Env = env
	t.cmd.Stdout, t.cmd.Stderr = t.logf, t.logf
	t.cmd.Dir = t.dir
	if err := t.cmd.Start(); err != nil {
		t.logf.Close()
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(t.cmd, t.exited)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := waitReady(wctx, t.addr, t.exited, t.Dial()...); err != nil {
		t.stopProcess()
		return fmt.Errorf("%s on %s: %w; its log:\n%s", t.name, t.addr, err, t.logTail())
	}
	return nil
}

// makeCerts writes a throwaway CA and a certificate for 127.0.0.1 under
// the target's dir, and keeps the client configuration that trusts it.
func (t *procTarget) makeCerts() error {
	dir := filepath.Join(t.dir, "certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := testcert.Generate(dir, "127.0.0.1")
	if err != nil {
		return err
	}
	t.caFile = f.CA
	t.tlsClient, err = testcert.LoadClientConfig(f, false)
	return err
}

// CAFile is the PEM file of the CA that signed the gateway-tls target's
// certificate, for clients other than franz-go (Kafka's perf tools); ""
// for the others.
func (t *procTarget) CAFile() string { return t.caFile }

// TLSClient is the TLS configuration that trusts the gateway-tls
// target's certificate; nil for the others.
func (t *procTarget) TLSClient() *tls.Config { return t.tlsClient }

// Dial is what a client needs beyond the address: the TLS configuration
// of the gateway-tls target, nothing for the others.
func (t *procTarget) Dial() []kgo.Opt {
	if t.tlsClient == nil {
		return nil
	}
	return []kgo.Opt{kgo.DialTLSConfig(t.tlsClient.Clone())}
}

func (t *procTarget) logTail() string {
	b, _ := os.ReadFile(filepath.Join(t.dir, "server.log"))
	return tailLines(string(b), 30)
}

// Stop sends SIGTERM, waits up to 30 s, then kills; it removes the
// target's temp dir.
func (t *procTarget) Stop() error {
	t.stopProcess()
	return removeDir(t.dir)
}

// stopProcess ends the child (SIGTERM, then SIGKILL after 30 s) and keeps
// its dir, so a failed start can show its log and try again.
func (t *procTarget) stopProcess() {
	if t.cmd == nil || t.cmd.Process == nil {
		return
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.exited:
	case <-time.After(30 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.exited
	}
	t.cmd = nil
	if t.logf != nil {
		t.logf.Close()
		t.logf = nil
	}
}

// gatewayBinary returns GatewayBin, building it once from ModuleDir. The
// gateway runs as its own process, like every other target, so its GC,
// scheduler and CPU time are its own and not mixed with the client's.
func (c *TargetConfig) gatewayBinary(ctx context.Context) (string, error) {
	if c.GatewayBin != "" {
		return c.GatewayBin, nil
	}
	if c.ModuleDir == "" {
		return "", errors.New("no gateway binary and no module dir to build it from")
	}
	out := filepath.Join(c.WorkDir, "iggy-kafka-gateway")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/iggy-kafka-gateway")
	cmd.Dir = c.ModuleDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the gateway: %v\n%s", err, stderr.String())
	}
	c.GatewayBin = out
	return out, nil
}

// inprocGateway runs the gateway in this process on the embedded store,
// started as the command starts it (gateway.Start). Tests use it; compare
// --inproc too.
type inprocGateway struct {
	name  string
	fsync string
	txn   bool // --transactions enabled
	dir   string
	gw    *gateway.Running
}

func (t *inprocGateway) Name() string      { return t.name }
func (t *inprocGateway) Brokers() []string { return []string{t.gw.Addr()} }
func (t *inprocGateway) PID() int          { return 0 }

func (t *inprocGateway) Start(ctx context.Context) error {
	var err error
	if t.dir, err = os.MkdirTemp("", "bench-gateway-"); err != nil {
		return err
	}
	t.gw, err = gateway.Start(ctx, gateway.Config{
		Store: gateway.StoreConfig{DataDir: t.dir, Fsync: t.fsync},
		Handlers: handlers.Config{
			Stream:            "kafka",
			AdvertisedHost:    "127.0.0.1",
			NodeID:            1,
			ClusterID:         "iggy-kafka-bench",
			AutoCreateTopics:  true,
			DefaultPartitions: 1,
			MaxFrameSize:      8 << 20,
			MaxFetchWait:      10 * time.Second,
			Transactions:      handlers.TxnConfig{Enabled: t.txn, Version: 2, MaxTimeout: 15 * time.Minute, MaxIDs: 100000},
		},
		// Port 0: the gateway advertises the port it bound.
		Loop: loop.Config{Addr: "127.0.0.1:0", DrainTimeout: 5 * time.Second},
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return waitReady(wctx, t.gw.Addr(), nil)
}

func (t *inprocGateway) Stop() error {
	var errs []error
	if t.gw != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, t.gw.Shutdown(ctx))
		cancel()
	}
	errs = append(errs, os.RemoveAll(t.dir))
	return errors.Join(errs...)
}

// inprocKfake runs kfake in this process.
type inprocKfake struct {
	name, mode string
	c          *TargetConfig
	dir        string
	cl         *kfake.Cluster
}

func (t *inprocKfake) Name() string      { return t.name }
func (t *inprocKfake) Brokers() []string { return t.cl.ListenAddrs() }
func (t *inprocKfake) PID() int          { return 0 }

func (t *inprocKfake) Start(context.Context) error {
	var err error
	if t.dir, err = os.MkdirTemp("", "bench-kfake-"); err != nil {
		return err
	}
	opts, err := KfakeOpts(t.mode, t.dir)
	if err != nil {
		return err
	}
	t.cl, err = kfake.NewCluster(opts...)
	return err
}

func (t *inprocKfake) Stop() error {
	if t.cl != nil {
		t.cl.Close()
	}
	return os.RemoveAll(t.dir)
}

// KfakeOpts are the kfake options of a mode: memory (kfake's default
// in-memory log), blackhole (produce acknowledged, nothing stored) or disk
// (persisted under dataDir, synced only on segment roll, as Kafka).
func KfakeOpts(mode, dataDir string, extra ...kfake.Opt) ([]kfake.Opt, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID("iggy-kafka-bench")}
	switch mode {
	case "memory":
	case "blackhole":
		opts = append(opts, kfake.BlackholeProduce())
	case "disk":
		opts = append(opts, kfake.DataDir(dataDir))
	default:
		return nil, fmt.Errorf("kfake mode %q: want memory, blackhole or disk", mode)
	}
	return append(opts, extra...), nil
}

// ServeKfake runs a one-broker kfake on addr (127.0.0.1 only) until ctx
// ends; compare starts it in a child process (`iggy-kafka-bench
// serve-kfake`) so kfake, like every target, has a process of its own.
func ServeKfake(ctx context.Context, addr, mode, dataDir string) error {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("serve-kfake binds 127.0.0.1 only, not %q", host)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return err
	}
	opts, err := KfakeOpts(mode, dataDir, kfake.Ports(port))
	if err != nil {
		return err
	}
	cl, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	<-ctx.Done()
	cl.Close()
	return nil
}

// CheckLoopback refuses any broker address that is not on the loopback
// interface: the harness generates load and must only ever aim it at this
// machine.
func CheckLoopback(addrs []string) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("broker %q: %w", a, err)
		}
		if host == "localhost" {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("broker %q is not a loopback address; the harness only targets 127.0.0.1", a)
		}
	}
	return nil
}

// ServeTarget starts the named target, creates topic (if not empty) with
// the given partitions, writes "ADDR <host:port> PID <pid>" as one line to
// out and keeps the target up until ctx ends. bench/kcat.sh drives it.
func ServeTarget(ctx context.Context, name string, c *TargetConfig, topic string, partitions int32, out io.Writer) error {
	if c.WorkDir == "" {
		d, err := os.MkdirTemp("", "iggy-kafka-bench-serve-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.WorkDir = d
	}
	t, err := NewTarget(name, c)
	if err != nil {
		return err
	}
	if err := t.Start(ctx); err != nil {
		return err
	}
	defer t.Stop()
	if topic != "" {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := CreateTopic(cctx, t.Brokers(), topic, partitions)
		cancel()
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "ADDR %s PID %d\n", t.Brokers()[0], t.PID())
	<-ctx.Done()
	return nil
}
