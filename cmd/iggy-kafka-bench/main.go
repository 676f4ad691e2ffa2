// Command iggy-kafka-bench drives real franz-go clients against a
// Kafka-wire address on 127.0.0.1 and compares the gateway with kfake and
// Apache Kafka. All the work is in package bench; this file parses flags.
//
//	iggy-kafka-bench produce  [flags]   # records/s, MB/s, ack latency
//	iggy-kafka-bench consume  [flags]   # read a topic from the earliest offset
//	iggy-kafka-bench e2e      [flags]   # produce-to-consume latency at --rate
//	iggy-kafka-bench compare  [--quick] # start every target, run, table + chart
//	iggy-kafka-bench serve    --target T  # start one target, print its address (bench/kcat.sh)
//	iggy-kafka-bench render   [--in F]    # compare.json -> compare.md + compare.png again
//
// docs/PERFORMANCE.md shows the output and how it was made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iggy-kafka/gateway/bench"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage: iggy-kafka-bench <produce|consume|e2e|compare|serve> [flags]
       iggy-kafka-bench <subcommand> -h    lists its flags
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "produce", "consume", "e2e":
		err = runWorkload(ctx, args[0], args[1:], stdout, stderr)
	case "compare":
		err = runCompare(ctx, args[1:], stdout, stderr)
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "render": // compare.json -> compare.md + compare.png again
		fs := flag.NewFlagSet("render", flag.ContinueOnError)
		in := fs.String("in", "bench/results/compare.json", "compare.json to read")
		out := fs.String("out", "bench/results", "directory for compare.{json,md,png}")
		if err = fs.Parse(args[1:]); err == nil {
			var c *bench.Comparison
			if c, err = bench.LoadComparison(*in); err == nil {
				_, err = c.WriteFiles(*out)
			}
		}
	case "serve-kfake": // started by compare; not for people
		fs := flag.NewFlagSet("serve-kfake", flag.ContinueOnError)
		addr := fs.String("addr", "127.0.0.1:0", "listen address")
		mode := fs.String("mode", "memory", "memory, blackhole or disk")
		dir := fs.String("data-dir", "", "data dir of mode disk")
		if err = fs.Parse(args[1:]); err == nil {
			err = bench.ServeKfake(ctx, *addr, *mode, *dir)
		}
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iggy-kafka-bench %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func runWorkload(ctx context.Context, kind string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The flags write into the options; brokers and the int32 fields are
	// set from theirs after Parse.
	po := bench.ProduceOptions{Warmup: true, Progress: stderr, Label: kind}
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses (loopback only)")
	fs.StringVar(&po.Topic, "topic", "bench", "topic")
	fs.IntVar(&po.Records, "records", 1_000_000, "records (produce/e2e: to send; consume: to read)")
	fs.IntVar(&po.RecordSize, "record-size", 100, "value bytes per record")
	fs.IntVar(&po.Producers, "producers", 1, "producer clients")
	partitions := fs.Int("partitions", 1, "partitions when the topic is created")
	fs.BoolVar(&po.CreateTopic, "create-topic", true, "create the topic first (an existing one is reused)")
	fs.StringVar(&po.Acks, "acks", "all", "all, leader or none")
	fs.StringVar(&po.Compression, "compression", "none", "none, snappy, lz4, zstd, gzip")
	fs.DurationVar(&po.Linger, "linger", 0, "producer linger (0: kgo's default 10ms; negative: none)")
	fs.IntVar(&po.Inflight, "inflight", 5, "produce requests in flight per broker when not idempotent")
	batch := fs.Int("batch-bytes", 0, "producer max batch bytes (0: kgo's default, 1 MB)")
	fs.IntVar(&po.MaxBuffered, "max-buffered", 0, "records buffered per producer (0: kgo's default, 10000)")
	fs.BoolVar(&po.Idempotent, "idempotent", true, "idempotent producer, kgo's default (needs --acks all)")
	fs.IntVar(&po.TxnEvery, "txn-every", 0, "produce: transactional producers committing every N records (0: not transactional)")
	readCommitted := fs.Bool("read-committed", false, "consume: isolation level read_committed")
	fs.Float64Var(&po.Rate, "rate", 0, "target records/s over all producers (0: as fast as possible; required for e2e)")
	fs.DurationVar(&po.MaxDuration, "max-duration", time.Minute, "cut the run after this")
	group := fs.String("group", "", "consume/e2e: consumer group (empty: direct partition consumer)")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- for stdout)")
	mdOut := fs.String("md", "", "write the result as a markdown table to this file (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	po.Brokers = strings.Split(*brokers, ",")
	if err := bench.CheckLoopback(po.Brokers); err != nil {
		return err
	}
	po.Partitions, po.BatchBytes = int32(*partitions), int32(*batch)
	var res *bench.Result
	var err error
	switch kind {
	case "produce":
		res, err = bench.RunProduce(ctx, po)
	case "consume":
		res, err = bench.RunConsume(ctx, bench.ConsumeOptions{Brokers: po.Brokers, Topic: po.Topic, Records: po.Records,
			Group: *group, ReadCommitted: *readCommitted, MaxDuration: po.MaxDuration, Progress: stderr, Label: kind})
	case "e2e":
		res, err = bench.RunE2E(ctx, bench.E2EOptions{Produce: po, Group: *group})
	}
	if err != nil {
		return err
	}
	res.Target = *brokers
	md := bench.ResultsTable([]*bench.Result{res})
	if err := emit(*mdOut, stdout, func(w io.Writer) error { _, err := io.WriteString(w, md); return err }); err != nil {
		return err
	}
	if *mdOut == "" {
		fmt.Fprint(stdout, md)
	}
	if err := emit(*jsonOut, stdout, func(w io.Writer) error { return bench.WriteJSON(w, res) }); err != nil {
		return err
	}
	if !res.Complete {
		return fmt.Errorf("run incomplete: %s", res.Err)
	}
	return nil
}

// emit writes to path ("-" is stdout; "" writes nothing).
func emit(path string, stdout io.Writer, f func(io.Writer) error) error {
	switch path {
	case "":
		return nil
	case "-":
		return f(stdout)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small workloads, 2 repetitions: finishes in a few minutes")
	targets := fs.String("targets", "", "comma-separated targets (default: gateway,gateway-always,kfake,kfake-blackhole,kafka; --quick drops gateway-always; iggy is added with --iggy-addr; only iggy and iggy-native: the Iggy workloads, produce/consume x 100 B/1 KiB x 1/4 partitions); one of "+strings.Join(bench.TargetNames, ", "))
	reps := fs.Int("reps", 0, "repetitions per workload and target (default 5, --quick 2)")
	scale := fs.Float64("scale", 1, "multiply every workload's record count")
	only := fs.String("workloads", "", "comma-separated workload names to run (default all but the perf-* ones); "+
		"\"perf\" stands for perf-produce-100B,perf-produce-1KiB,perf-consume-100B,perf-consume-1KiB (Kafka's own perf tools as the client); "+
		"\"txn\" for the transaction workloads idem-produce-100B,txn-produce-100B,idem-produce-1KiB,txn-produce-1KiB,idem-produce-100B-4prod,txn-produce-100B-4prod,txn-consume-100B-uncommitted,txn-consume-100B-committed "+
		"(the gateway targets then run with --transactions enabled); "+
		"\"share\" for the share-group workloads share-100B-4cons-1p,share-100B-16cons-4p (franz-go share consumers of one share group accepting every record)")
	out := fs.String("out", "bench/results", "directory for compare.json, compare.md, compare.png")
	gwBin := fs.String("gateway-bin", "", "prebuilt gateway binary (default: go build ./cmd/iggy-kafka-gateway)")
	kafkaLib := fs.String("kafka-lib", "", "Kafka broker jars (default bench/kafka/target/lib; bench/kafka/fetch.sh fills it)")
	java := fs.String("java", "java", "java binary for the kafka target and the perf workloads")
	toolsLib := fs.String("kafka-tools-lib", "", "kafka-tools 4.4.0 (4.2 or later: the perf workloads use its option names) and its dependencies for the perf workloads "+
		"(default e2e/java/target/lib, which e2e/java/fetch.sh fills; without them the perf workloads are skipped with a message)")
	var perfProps multiFlag
	fs.Var(&perfProps, "perf-producer-prop", "KEY=VALUE producer setting of the perf-produce workloads, after their acks=all, repeatable (e.g. --perf-producer-prop=batch.size=1048576)")
	iggyAddr := fs.String("iggy-addr", "", "Iggy server for the iggy and iggy-native targets (default: each starts its own from ../shared/iggy/server)")
	var iggyArgs multiFlag
	fs.Var(&iggyArgs, "iggy-arg", "extra gateway flag for the iggy target, repeatable (e.g. --iggy-arg=--iggy-username=iggy; "+
		"--iggy-arg=--tail-cache-mb=0 makes the consume workloads read the server instead of the gateway's tail cache)")
	scaling := fs.Bool("scaling", false, "the scaling workloads instead (producer connections 1/4/16/64, 100 topics x 16 partitions produce and consume, consumers 1/8/64)")
	var gwArgs multiFlag
	fs.Var(&gwArgs, "gateway-arg", "extra flag for the gateway targets' binary, repeatable (e.g. --gateway-arg=--fetch-session-cache-slots=0)")
	inproc := fs.Bool("inproc", false, "run kfake in this process instead of a child process")
	pprofAddr := fs.String("pprof-addr", "", "gateway --pprof-addr (127.0.0.1:PORT); with --profile, CPU profiles per workload")
	profile := fs.String("profile", "", "directory for the gateway's CPU profiles (needs --pprof-addr)")
	maxDur := fs.Duration("max-duration", time.Minute, "cut any single run after this")
	compression := fs.String("compression", "none", "producer compression")
	acks := fs.String("acks", "all", "producer acks")
	idem := fs.Bool("idempotent", true, "idempotent producers (kgo's default)")
	linger := fs.Duration("linger", 0, "producer linger of the throughput workloads (0: kgo's default 10ms; negative: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, a := range []string{*pprofAddr, *iggyAddr} {
		if a == "" {
			continue
		}
		if err := bench.CheckLoopback([]string{a}); err != nil {
			return err
		}
	}
	ts := *targets
	if ts == "" {
		ts = "gateway,gateway-always,kfake,kfake-blackhole,kafka"
		if *quick {
			ts = "gateway,kfake,kfake-blackhole,kafka"
		}
		if *iggyAddr != "" {
			ts += ",iggy"
		}
	}
	if *reps == 0 {
		*reps = 5
		if *quick {
			*reps = 2
		}
	}
	ws := bench.DefaultWorkloads(*quick)
	switch {
	case *scaling:
		ws = bench.ScalingWorkloads(*quick)
	case onlyIggy(strings.Split(ts, ",")):
		ws = bench.IggyWorkloads(*quick)
	}
	picked, err := pickWorkloads(ws, workloadGroups(*quick), *only)
	if err != nil {
		return err
	}
	for i := range picked {
		picked[i].Records = int(float64(picked[i].Records) * *scale)
	}
	modDir, err := moduleDir()
	if err != nil && *gwBin == "" {
		return fmt.Errorf("finding the module to build the gateway from (run from the repository or pass --gateway-bin): %w", err)
	}
	self := ""
	if !*inproc {
		if self, err = os.Executable(); err != nil {
			return err
		}
	}
	start := time.Now()
	c, err := bench.Compare(ctx, bench.CompareOptions{
		Targets: strings.Split(ts, ","), Workloads: picked, Reps: *reps, MaxDuration: *maxDur,
		Compression: *compression, Acks: *acks, Idempotent: *idem, Linger: *linger,
		Target: bench.TargetConfig{ModuleDir: modDir, GatewayBin: *gwBin, KafkaLib: *kafkaLib, Java: *java, ToolsLib: *toolsLib,
			IggyAddr: *iggyAddr, IggyArgs: iggyArgs, GatewayArgs: gwArgs, SelfExe: self, PprofAddr: *pprofAddr},
		Progress: stderr, Log: stderr, ProfileDir: *profile, PerfProducerProps: perfProps,
	})
	if err != nil {
		return err
	}
	c.Command = "go run ./cmd/iggy-kafka-bench compare " + strings.Join(args, " ")
	files, err := c.WriteFiles(*out)
	fmt.Fprint(stdout, c.Markdown())
	fmt.Fprintf(stderr, "compare took %s; wrote %s\n", time.Since(start).Round(time.Second), strings.Join(files, ", "))
	if err != nil {
		return err
	}
	// A run that did not count every record fails the command (CI's smoke
	// relies on it); the table above says which and why.
	if n := c.Incomplete(); n > 0 {
		return fmt.Errorf("%d of %d runs did not complete", n, len(c.Runs))
	}
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "gateway", "one of "+strings.Join(bench.TargetNames, ", "))
	topic := fs.String("topic", "", "create this topic once it is up")
	partitions := fs.Int("partitions", 1, "partitions of --topic")
	gwBin := fs.String("gateway-bin", "", "prebuilt gateway binary (default: go build ./cmd/iggy-kafka-gateway)")
	kafkaLib := fs.String("kafka-lib", "", "Kafka broker jars (default bench/kafka/target/lib)")
	iggyAddr := fs.String("iggy-addr", "", "Iggy server for the iggy target")
	if err := fs.Parse(args); err != nil {
		return err
	}
	modDir, _ := moduleDir()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return bench.ServeTarget(ctx, *target, &bench.TargetConfig{ModuleDir: modDir, GatewayBin: *gwBin,
		KafkaLib: *kafkaLib, IggyAddr: *iggyAddr, SelfExe: self}, *topic, int32(*partitions), stdout)
}

// workloadGroups are the opt-in workload groups --workloads names.
func workloadGroups(quick bool) map[string][]bench.Workload {
	return map[string][]bench.Workload{"perf": bench.PerfWorkloads(quick), "txn": bench.TxnWorkloads(quick), "share": bench.ShareWorkloads(quick)}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// pickWorkloads is what --workloads names, in the order of the set and
// then of the opt-in groups (sorted by group name): with no names the set
// alone (the perf workloads start a JVM per run and would take the full
// comparison past ten minutes; the txn ones change the gateway's
// configuration); a group's name ("perf", "txn") names all of its
// workloads. An unknown name is an error rather than a run that quietly
// does less.
func pickWorkloads(set []bench.Workload, groups map[string][]bench.Workload, only string) ([]bench.Workload, error) {
	if only == "" {
		return set, nil
	}
	all := slices.Clone(set)
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		all = append(all, groups[g]...)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); groups[n] != nil {
			for _, w := range groups[n] {
				want[w.Name] = true
			}
		} else if n != "" {
			want[n] = true
		}
	}
	var picked []bench.Workload
	for _, w := range all {
		if want[w.Name] {
			picked = append(picked, w)
			delete(want, w.Name)
		}
	}
	if len(want) > 0 {
		var names []string
		for _, w := range all {
			names = append(names, w.Name)
		}
		return nil, fmt.Errorf("unknown workloads %s (this run knows %s, and %s)",
			strings.Join(slices.Sorted(maps.Keys(want)), ","), strings.Join(names, ","), strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	}
	return picked, nil
}

// onlyIggy reports targets made only of iggy and iggy-native.
func onlyIggy(targets []string) bool {
	for _, t := range targets {
		if t != "iggy" && t != "iggy-native" && t != "iggy-native-paced" {
			return false
		}
	}
	return len(targets) > 0
}

// moduleDir is the directory of the go.mod above the working directory.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(out))
	if p == "" || p == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(p), nil
}
