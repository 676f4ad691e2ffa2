package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kafka's own load generators as a second client: ProducerPerformance
// (kafka-producer-perf-test.sh) and ConsumerPerformance
// (kafka-consumer-perf-test.sh) from kafka-tools, run as a JVM per run
// against any Kafka-wire target, so the gateway's figures can be set next
// to published Kafka benchmarks made with the same tools. Workload kinds
// "perf-produce" and "perf-consume"; PerfWorkloads lists them.

// PerfWorkloads are the runs of Kafka's perf tools: one producer at full
// speed (--throughput -1) with the Java client's defaults and acks=all,
// and one consumer reading a topic preloaded as the consume workloads
// preload theirs. They are not in DefaultWorkloads: with a JVM started
// per run they would take the full comparison past ten minutes on the
// 2-core box; compare --workloads perf selects them.
func PerfWorkloads(quick bool) []Workload {
	n100, n1k := 1_000_000, 200_000
	if quick {
		n100, n1k = 500_000, 100_000
	}
	return []Workload{
		{Name: "perf-produce-100B", Kind: "perf-produce", RecordSize: 100, Records: n100, Partitions: 1, Producers: 1},
		{Name: "perf-produce-1KiB", Kind: "perf-produce", RecordSize: 1024, Records: n1k, Partitions: 1, Producers: 1},
		{Name: "perf-consume-100B", Kind: "perf-consume", RecordSize: 100, Records: n100, Partitions: 1},
		{Name: "perf-consume-1KiB", Kind: "perf-consume", RecordSize: 1024, Records: n1k, Partitions: 1},
	}
}

func isPerfKind(kind string) bool { return kind == "perf-produce" || kind == "perf-consume" }

// perfJVM are the options kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh start the tools with (a 512 MiB heap and
// kafka-run-class.sh's performance options), plus an English locale:
// the tools format numbers with printf, and a locale with decimal commas
// would garble the comma-separated summary the harness parses.
var perfJVM = slices.Concat([]string{"-Xmx512M"}, kafkaJVMPerf, []string{
	"-Duser.language=en", "-Duser.country=US",
	// slf4j-simple (in e2e/java/target/lib) logs every client config at
	// INFO on stderr; warnings and errors are what a failed run needs.
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"})

// perfTools is a java binary and the classpath holding kafka-tools.
type perfTools struct {
	java, classpath string
}

// perfTools finds java and the kafka-tools jars: ToolsLib, else
// ModuleDir/e2e/java/target/lib (e2e/java/fetch.sh), else the broker's
// KafkaLib if it holds kafka-tools. Missing either is ErrSkip: the perf
// workloads are skipped with the message, as the kafka target is.
func (c *TargetConfig) perfTools() (*perfTools, error) {
	java := c.Java
	if java == "" {
		java = "java"
	}
	javaPath, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("perf tools: no %s on PATH (install a JDK 17+): %w", java, ErrSkip)
	}
	dirs := []string{c.ToolsLib}
	if c.ToolsLib == "" && c.ModuleDir != "" {
		dirs = []string{filepath.Join(c.ModuleDir, "e2e", "java", "target", "lib"), c.KafkaLib,
			filepath.Join(c.ModuleDir, "bench", "kafka", "target", "lib")}
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return d == "" })
	if len(dirs) == 0 {
		return nil, fmt.Errorf("perf tools: no directory of kafka-tools jars given (--kafka-tools-lib): %w", ErrSkip)
	}
	for _, d := range dirs {
		if jars, _ := filepath.Glob(filepath.Join(d, "kafka-tools-[0-9]*.jar")); len(jars) > 0 {
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, err
			}
			return &perfTools{java: javaPath, classpath: filepath.Join(abs, "*")}, nil
		}
	}
	return nil, fmt.Errorf("perf tools: no kafka-tools jar in %s (run e2e/java/fetch.sh): %w", strings.Join(dirs, " or "), ErrSkip)
}

// perfRun is one run of a perf tool against a target.
type perfRun struct {
	broker     string
	topic      string
	records    int
	recordSize int
	// clientProps is a client properties file (the gateway-tls target's
	// SSL settings), passed as --command-config.
	clientProps   string
	producerProps []string // extra KEY=VALUE producer settings, after acks=all
	maxDuration   time.Duration
}

// toolOutput is what one JVM run left behind.
type toolOutput struct {
	stdout, stderr string
	cpu            time.Duration // the JVM's user+system time, start-up and JIT included
	err            error         // exit status or the deadline
}

// run starts class with args and waits up to maxDuration plus half a
// minute for the JVM's start and the client's shutdown.
func (p *perfTools) run(ctx context.Context, maxDuration time.Duration, class string, args ...string) toolOutput {
	rctx, cancel := context.WithTimeout(ctx, maxDuration+30*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, perfJVM...), "-cp", p.classpath, class), args...)
	cmd := exec.CommandContext(rctx, p.java, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := toolOutput{stdout: stdout.String(), stderr: stderr.String(), err: err}
	if cmd.ProcessState != nil {
		out.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if rctx.Err() != nil && ctx.Err() == nil {
		out.err = fmt.Errorf("%s cut after %s: %w", class, maxDuration+30*time.Second, rctx.Err())
	}
	return out
}

// runTool runs class with args and then r's client properties file after
// --command-config. The Result holds what every run has (the workload, the
// records asked for, the JVM's CPU); the caller adds what the tool's
// summary says, then settles it.
func (p *perfTools) runTool(ctx context.Context, r perfRun, workload, class string, args []string) (toolOutput, *Result) {
	if r.clientProps != "" {
		args = append(args, "--command-config", r.clientProps)
	}
	out := p.run(ctx, r.maxDuration, class, args...)
	return out, &Result{Workload: workload, RecordSize: r.recordSize, Records: int64(r.records), ClientCPU: out.cpu.Seconds()}
}

// settle says whether a tool run counts (toolError): allCounted is the
// summary's verdict that every record was verb.
func settle(res *Result, out toolOutput, perr error, allCounted bool, verb string) {
	res.Err = toolError(out, perr, allCounted, verb, res.Counted, int(res.Records))
	res.Complete = res.Err == ""
}

// produce runs ProducerPerformance: r.records records of r.recordSize
// bytes to r.topic, unthrottled, acks=all and the Java client's defaults
// otherwise (linger.ms 5, batch.size 16384, idempotent, no compression).
func (p *perfTools) produce(ctx context.Context, r perfRun) *Result {
	args := append([]string{"--topic", r.topic, "--num-records", strconv.Itoa(r.records),
		"--record-size", strconv.Itoa(r.recordSize), "--throughput", "-1",
		"--bootstrap-server", r.broker, "--command-property", "acks=all"}, r.producerProps...)
	out, res := p.runTool(ctx, r, "perf-produce", "org.apache.kafka.tools.ProducerPerformance", args)
	s, perr := parseProducerPerf(out.stdout)
	if s != nil {
		res.ToolLine, res.Counted = s.line, s.records
		res.Bytes = s.records * int64(r.recordSize) // every value is --record-size bytes
		res.RecPerSec = s.recPerSec
		// The tool's "MB/sec" is MiB (2^20 bytes); the harness's MB/s is
		// 10^6 bytes of values, computed from the record rate.
		res.MBPerSec = s.recPerSec * float64(r.recordSize) / 1e6
		if s.recPerSec > 0 {
			res.Seconds = float64(s.records) / s.recPerSec
		}
		res.Latency = s.latency
	}
	settle(res, out, perr, s != nil && s.records == res.Records, "acknowledged")
	return res
}

// consume runs ConsumerPerformance on r.topic, in a group of its own, from
// the earliest offset until r.records records arrived (or ten seconds
// pass without one, the tool's default).
func (p *perfTools) consume(ctx context.Context, r perfRun) *Result {
	args := []string{"--bootstrap-server", r.broker, "--topic", r.topic, "--num-records", strconv.Itoa(r.records),
		"--group", "perf-" + r.topic}
	out, res := p.runTool(ctx, r, "perf-consume", "org.apache.kafka.tools.ConsumerPerformance", args)
	s, perr := parseConsumerPerf(out.stdout)
	if s != nil {
		res.ToolLine, res.Counted = s.line, s.records
		res.Bytes = consumedBytes(s.mib, s.records, r.recordSize)
		if s.records > 0 {
			res.RecordSize = int(res.Bytes / s.records)
		}
		// The fetch figures: from the group's assignment to the last
		// record, as the franz-go consume workload times from its first
		// fetch; the join and sync before it are not the read rate.
		res.Seconds = float64(s.fetchMs) / 1000
		if res.Seconds > 0 {
			res.RecPerSec = float64(s.records) / res.Seconds
			res.MBPerSec = float64(res.Bytes) / res.Seconds / 1e6
		}
	}
	settle(res, out, perr, s != nil && s.records == res.Records && !s.timedOut, "consumed")
	return res
}

// consumedBytes is the bytes ConsumerPerformance read: records x size when
// its MiB, printed to four decimals, agrees within that rounding (the
// harness preloaded values of exactly size bytes, no keys), else its MiB
// as printed, so a topic holding something else shows.
func consumedBytes(mib float64, records int64, size int) int64 {
	exact := records * int64(size)
	if math.Abs(mib*(1<<20)-float64(exact)) <= 0.00005*(1<<20)+1 {
		return exact
	}
	return int64(math.Round(mib * (1 << 20)))
}

// toolError is why a tool run does not count, or "": the process failed,
// its summary could not be read, or it did not count every record.
func toolError(out toolOutput, perr error, allCounted bool, verb string, counted int64, want int) string {
	var why string
	switch {
	case out.err != nil:
		why = out.err.Error()
	case perr != nil:
		why = perr.Error()
	case !allCounted:
		why = fmt.Sprintf("%d of %d records %s", counted, want, verb)
	default:
		return ""
	}
	if e := firstException(out.stderr); e != "" {
		why += "; " + e
	} else if perr != nil || out.err != nil {
		why += "; its output: " + tailLines(strings.TrimSpace(out.stdout+"\n"+out.stderr), 5)
	}
	return why
}

// firstException is the first line of s naming a Java exception, the
// reason a failed send or poll gives (the producer tool prints a stack
// trace per failed record and still exits 0).
func firstException(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if exceptionRE.MatchString(l) && !strings.HasPrefix(l, "at ") {
			return l
		}
	}
	return ""
}

var exceptionRE = regexp.MustCompile(`^(Caused by: )?[a-z][a-zA-Z0-9_.]*\.[A-Z][A-Za-z0-9_]*(Exception|Error)\b`)

// producerSummary is ProducerPerformance's final line.
type producerSummary struct {
	line      string
	records   int64
	recPerSec float64
	mibPerSec float64 // as printed: the tool's "MB/sec" is 2^20 bytes
	latency   *Latency
}

// producerTotalRE matches the total ProducerPerformance 4.4 prints on
// exit (the lines it prints every five seconds lack the percentiles; 4.1
// printed the rate to one decimal):
//
//	300000 records sent, 162249.864792 records/sec (15.47 MB/sec), 312.29 ms avg latency, 474.00 ms max latency, 405 ms 50th, 450 ms 95th, 458 ms 99th, 474 ms 99.9th.
var producerTotalRE = regexp.MustCompile(`(?m)^(\d+) records sent, (\S+) records/sec \((\S+) MB/sec\), (\S+) ms avg latency, ` +
	`(\S+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.\s*$`)

// parseProducerPerf reads the total line of ProducerPerformance's output.
// Its latencies are whole milliseconds, from send() to the callback, of
// up to 500,000 sampled records; with no record acknowledged it prints NaN
// for the mean and the harness reports no latency.
func parseProducerPerf(out string) (*producerSummary, error) {
	ms := producerTotalRE.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return nil, errors.New(`ProducerPerformance printed no "records sent ... 99.9th" total`)
	}
	m := ms[len(ms)-1]
	var nums [9]float64
	for i := range nums {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("ProducerPerformance total %q: %v", m[0], err)
		}
		nums[i] = v
	}
	s := &producerSummary{line: strings.TrimSpace(m[0]), records: int64(nums[0]), recPerSec: finite(nums[1]), mibPerSec: finite(nums[2])}
	if s.records > 0 && !math.IsNaN(nums[3]) {
		s.latency = &Latency{Count: s.records, Mean: nums[3], Max: nums[4], P50: nums[5], P95: nums[6], P99: nums[7], P999: nums[8]}
	}
	return s, nil
}

// consumerSummary is ConsumerPerformance's summary line.
type consumerSummary struct {
	line           string
	mib            float64 // data.consumed.in.MB: 2^20 bytes of keys and values
	records        int64   // data.consumed.in.nMsg
	recPerSec      float64 // nMsg.sec, over the whole run, group join included
	rebalanceMs    int64   // rebalance.time.ms: until the partitions were assigned
	fetchMs        int64   // fetch.time.ms: the rest
	fetchRecPerSec float64 // fetch.nMsg.sec
	fetchMiBPerSec float64 // fetch.MB.sec
	timedOut       bool    // the WARNING that it stopped short
}

// consumerHeader is the first field names of the header ConsumerPerformance
// prints before its summary (without --show-detailed-stats).
const consumerHeader = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"

// parseConsumerPerf reads ConsumerPerformance's summary, the line of ten
// comma-separated values after its header:
//
//	start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
//	2026-12-05 06:04:03:475, 2026-12-05 06:04:06:846, 28.7030, 8.5147, 300095, 89022.5452, 887, 2484, 11.5552, 120811.1916
//
// A "WARNING: Exiting before consuming the expected number of records"
// line (4.1: "of messages") may stand between the two.
func parseConsumerPerf(out string) (*consumerSummary, error) {
	lines := strings.Split(out, "\n")
	header := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == consumerHeader {
			header = i
		}
	}
	if header < 0 {
		return nil, errors.New("ConsumerPerformance printed no summary header")
	}
	s := &consumerSummary{}
	for _, l := range lines[header+1:] {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "WARNING: Exiting before consuming the expected number of ") {
			s.timedOut = true
			continue
		}
		f := strings.Split(l, ", ")
		if len(f) != 10 {
			continue
		}
		var v [8]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[i+2], 64)
			if err != nil {
				return nil, fmt.Errorf("ConsumerPerformance summary %q: field %d: %v", l, i+3, err)
			}
			v[i] = x
		}
		// v[1], MB.sec, is over the whole run like nMsg.sec.
		s.line = l
		s.mib, s.records, s.recPerSec = v[0], int64(v[2]), finite(v[3])
		s.rebalanceMs, s.fetchMs, s.fetchMiBPerSec, s.fetchRecPerSec = int64(v[4]), int64(v[5]), finite(v[6]), finite(v[7])
		return s, nil
	}
	return nil, errors.New("ConsumerPerformance printed a header but no summary line")
}

// finite maps the NaN and Infinity a tool prints for a zero duration to 0:
// no figure, rendered "–", rather than one JSON cannot hold.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// perfClientProps writes, for a target that needs more than an address
// (the gateway-tls target's SSL listener and CA), a Java client properties
// file at path and returns path; "" for the others.
func perfClientProps(t Target, path string) (string, error) {
	ca, ok := t.(interface{ CAFile() string })
	if !ok || ca.CAFile() == "" {
		return "", nil
	}
	props := fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n", ca.CAFile())
	return path, os.WriteFile(path, []byte(props), 0o600)
}

// runPerf runs a perf-produce or perf-consume workload on t once: the
// topic is created (perf-produce) or preloaded (perf-consume) by the
// harness, then one JVM runs the tool. The server CPU is taken around
// the JVM's whole life, its start included; the client CPU is the JVM's,
// as iggy-bench's is for iggy-native. A perf-produce run is complete
// when the tool counted every record acknowledged and the high
// watermark says the target stored them all.
func runPerf(ctx context.Context, o CompareOptions, t Target, w Workload, po ProduceOptions, label string) (*Result, error) {
	tools, err := o.Target.perfTools()
	if err != nil {
		return nil, err
	}
	props, err := perfClientProps(t, filepath.Join(o.Target.WorkDir, "perf-client-"+t.Name()+".properties"))
	if err != nil {
		return nil, err
	}
	run := perfRun{broker: t.Brokers()[0], topic: po.Topic, records: w.Records, recordSize: w.RecordSize,
		clientProps: props, producerProps: o.PerfProducerProps, maxDuration: o.MaxDuration}
	produce := w.Kind == "perf-produce"
	if produce {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = CreateTopic(cctx, po.Brokers, po.Topic, po.Partitions, po.Dial...)
		cancel()
	} else {
		err = preload(ctx, po)
	}
	if err != nil {
		return nil, err
	}
	if o.Progress != nil {
		tool := map[bool]string{true: "ProducerPerformance", false: "ConsumerPerformance"}[produce]
		fmt.Fprintf(o.Progress, "%s: %s, %d records of %d B ...\n", label, tool, w.Records, w.RecordSize)
	}
	s0, g0 := targetCPU(t), gatewayCPU(t)
	var r *Result
	if produce {
		r = tools.produce(ctx, run)
	} else {
		r = tools.consume(ctx, run)
	}
	r.ServerCPU, r.GatewayCPU = (targetCPU(t) - s0).Seconds(), (gatewayCPU(t) - g0).Seconds()
	if produce && r.Complete {
		checkStored(ctx, t, po, int64(w.Records), int64(w.Records), r)
	}
	return r, nil
}
