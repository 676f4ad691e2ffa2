package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// MachineHeader is the block every report opens with.
func MachineHeader(m Machine, command, date string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- machine: %s, %d cores", m.CPU, m.Cores)
	if m.MemoryGiB > 0 {
		fmt.Fprintf(&b, ", %d GiB", m.MemoryGiB)
	}
	fmt.Fprintf(&b, "; %s", m.OS)
	if m.Kernel != "" {
		fmt.Fprintf(&b, " (kernel %s)", m.Kernel)
	}
	fmt.Fprintf(&b, "; %s", m.Go)
	if m.Java != "" {
		fmt.Fprintf(&b, "; %s", m.Java)
	}
	fmt.Fprintf(&b, "\n- command: `%s`\n- date: %s\n", command, date)
	return b.String()
}

// ResultsTable is a markdown table of single runs (produce, consume, e2e).
func ResultsTable(rs []*Result) string {
	var b strings.Builder
	b.WriteString("| target | workload | size B | records | counted | seconds | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | max ms | complete |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		l := r.Latency
		if r.E2ELatency != nil {
			l = r.E2ELatency
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %.3f | %s | %.1f | %s | %s | %s | %s | %s |\n",
			orDash(r.Target), r.Workload, r.RecordSize, r.Records, r.Counted, r.Seconds, human(r.RecPerSec), r.MBPerSec,
			latCell(l, func(l *Latency) float64 { return l.P50 }), latCell(l, func(l *Latency) float64 { return l.P99 }),
			latCell(l, func(l *Latency) float64 { return l.P999 }), latCell(l, func(l *Latency) float64 { return l.Max }),
			completeCell(r))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// num formats v, or "–" when there is none (0 or less).
func num(v float64, format string) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func latCell(l *Latency, f func(*Latency) float64) string {
	if l == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", f(l))
}

func completeCell(r *Result) string {
	if r.Complete {
		return "yes"
	}
	return "NO: " + strings.ReplaceAll(r.Err, "|", "/")
}

// Markdown renders the comparison: machine header, the table of medians,
// the checks against the targets and what was skipped.
func (c *Comparison) Markdown() string {
	var b strings.Builder
	b.WriteString(MachineHeader(c.Machine, c.Command, c.Date.Format("2006-01-02 15:04 UTC")))
	fmt.Fprintf(&b, "- runs: %d per workload and target, interleaved (every target once, then again); medians; "+
		"records/s range is min–max; \"gateway ÷ target\" is the gateway's median records/s over the target's, "+
		"\"paired\" the median of the ratios of runs made back to back\n\n", c.Reps)
	b.WriteString("| workload | target | ok/runs | records/s | range | MB/s | p50 ms | p99 ms | p99.9 ms | max ms | server CPU s | CPU s/GB | gateway ÷ target | paired |\n")
	b.WriteString("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Rows {
		if c.kindOf(r.Workload) == "idle" {
			continue // its own table below
		}
		name := r.Workload
		if r.Rate > 0 {
			name = fmt.Sprintf("%s @ %s/s", r.Workload, human(r.Rate))
		}
		ratio, paired := "–", "–"
		if r.GatewayX > 0 && r.Target != c.Base {
			ratio = fmt.Sprintf("%.2fx", r.GatewayX)
		}
		if r.PairedX > 0 && r.Target != c.Base {
			paired = fmt.Sprintf("%.2fx", r.PairedX)
		}
		cpu := "–"
		if r.ServerCPU > 0 {
			cpu = fmt.Sprintf("%.2f", r.ServerCPU)
		}
		rng := "–"
		if r.OK > 0 {
			rng = human(r.MinRec) + "–" + human(r.MaxRec)
		}
		pergb := "–"
		if r.ServerSPerGB > 0 {
			pergb = fmt.Sprintf("%.2f", r.ServerSPerGB)
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			name, r.Target, r.OK, r.Runs, human(r.RecPerSec), rng, r.MBPerSec,
			latCell(r.Latency, func(l *Latency) float64 { return l.P50 }), latCell(r.Latency, func(l *Latency) float64 { return l.P99 }),
			latCell(r.Latency, func(l *Latency) float64 { return l.P999 }), latCell(r.Latency, func(l *Latency) float64 { return l.Max }),
			cpu, pergb, ratio, paired)
	}
	c.idleTable(&b)
	c.perfTable(&b)
	c.shareTable(&b)
	if slices.Contains(c.Targets, "iggy-native") || slices.Contains(c.Targets, "iggy-native-paced") {
		b.WriteString("\niggy-native is iggy-bench on its own iggy-server: its latencies are per batch (one send or poll " +
			"to its reply), not per record, and its server CPU is the server's; iggy's server CPU is the gateway's plus its server's. " +
			"iggy-native-paced is the same held (--rate-limit) to the MB/s of the iggy run of the workload just before it.\n")
	}
	if slices.Contains(c.Targets, "iggy-native") || slices.Contains(c.Targets, "iggy-native-paced") || slices.Contains(c.Targets, "iggy") {
		c.iggyCPUTable(&b)
	}
	for _, r := range c.Rows {
		if r.FirstError != "" {
			fmt.Fprintf(&b, "\n%s on %s: %d of %d runs incomplete, first: %s\n", r.Workload, r.Target, r.Runs-r.OK, r.Runs, r.FirstError)
		}
	}
	if len(c.Checks) > 0 {
		b.WriteString("\n| target from the issues | want | measured | met |\n|---|---|---:|---|\n")
		for _, ck := range c.Checks {
			met := "yes"
			if !ck.Pass {
				met = "**no**, " + ck.Shortfall
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", ck.What, ck.Want, ck.GotText, met)
		}
	}
	skipped := slices.Sorted(maps.Keys(c.Skipped)) // a stable order from run to run
	for _, name := range skipped {
		fmt.Fprintf(&b, "\nskipped %s: %s\n", name, c.Skipped[name])
	}
	return b.String()
}

// WriteFiles writes compare.json, compare.md and compare.png into dir.
func (c *Comparison) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	jp := filepath.Join(dir, "compare.json")
	f, err := os.Create(jp)
	if err != nil {
		return nil, err
	}
	err = WriteJSON(f, c)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	files = append(files, jp)
	mp := filepath.Join(dir, "compare.md")
	if err := os.WriteFile(mp, []byte(c.Markdown()), 0o644); err != nil {
		return nil, err
	}
	files = append(files, mp)
	pp := filepath.Join(dir, "compare.png")
	if err := c.Chart(pp); err != nil {
		return files, fmt.Errorf("chart: %w", err)
	}
	if _, err := os.Stat(pp); err != nil {
		return files, nil // nothing to chart
	}
	return append(files, pp), nil
}

// LoadComparison reads a compare.json written by WriteFiles and derives
// the rows and checks again from its runs, so its table and chart can be
// rendered again.
func LoadComparison(path string) (*Comparison, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Comparison{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.summarise() // rows and checks follow the runs, as this version computes them
	c.Checks = c.checks()
	return c, nil
}

// kindOf is the kind of the workload named name.
func (c *Comparison) kindOf(name string) string {
	for _, w := range c.Workloads {
		if w.Name == name {
			return w.Kind
		}
	}
	return ""
}

// rowsOfKind is the rows whose workload's kind satisfies keep, in order.
func (c *Comparison) rowsOfKind(keep func(kind string) bool) []Row {
	var rows []Row
	for _, r := range c.Rows {
		if keep(c.kindOf(r.Workload)) {
			rows = append(rows, r)
		}
	}
	return rows
}

// idleTable renders the idle workloads' rows: resident memory per open
// connection.
func (c *Comparison) idleTable(b *strings.Builder) {
	rows := c.rowsOfKind(func(kind string) bool { return kind == "idle" })
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nIdle connections: the target's resident memory (VmRSS) grown per connection held open, each after " +
		"one ApiVersions round trip (on gateway-tls after its TLS handshake); medians. \"–\": the target runs in the " +
		"harness's process, where its memory is not separable.\n\n" +
		"| workload | target | ok/runs | connections | RSS per connection |\n|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		conns, rss := 0, "–"
		for _, w := range c.Workloads {
			if w.Name == r.Workload {
				conns = w.Records
			}
		}
		if r.RSSPerConn != 0 {
			rss = fmt.Sprintf("%.1f KiB", r.RSSPerConn/1024)
		}
		fmt.Fprintf(b, "| %s | %s | %d/%d | %d | %s |\n", r.Workload, r.Target, r.OK, r.Runs, conns, rss)
	}
}

// perfTable renders what only Kafka's perf tools report or cost: the
// producer tool's mean and p95 latency, and the CPU per record of the
// client JVM beside the server's.
func (c *Comparison) perfTable(b *strings.Builder) {
	rows := c.rowsOfKind(isPerfKind)
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nKafka's perf tools (ProducerPerformance, ConsumerPerformance; one JVM per run): the producer's mean and " +
		"p95 latency as it prints them (whole ms, send() to callback, of up to 500k sampled records); CPU per record " +
		"(µs) of the client, the JVM with its start-up and JIT, and of the server; medians. \"–\": not reported, " +
		"or the target runs in the harness's process.\n\n" +
		"| workload | target | ok/runs | records/s | avg ms | p95 ms | client CPU s | client µs/rec | server µs/rec |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		avg, p95 := "–", "–"
		if r.Latency != nil {
			avg, p95 = fmt.Sprintf("%.2f", r.Latency.Mean), fmt.Sprintf("%.2f", r.Latency.P95)
		}
		fmt.Fprintf(b, "| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s |\n", r.Workload, r.Target, r.OK, r.Runs,
			human(r.RecPerSec), avg, p95, num(r.ClientCPU, "%.2f"), num(r.ClientUsPerRec, "%.3f"), num(r.ServerUsPerRec, "%.3f"))
	}
}

// shareTable renders the share workloads' cost: CPU per record accepted
// of the target and of the harness's consumers, and the redeliveries.
func (c *Comparison) shareTable(b *strings.Builder) {
	rows := c.rowsOfKind(func(kind string) bool { return kind == "share" })
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nShare groups: franz-go share consumers of one share group, implicit acknowledgement (a poll accepts the " +
		"previous poll's records; the last poll's are accepted and flushed before the clock stops), timed from the " +
		"consumers' start to the last acceptance answered; first record: seconds from their start to the first record " +
		"delivered (joining, assignment), and records/s from then on; CPU per record accepted (µs, medians); duplicates: " +
		"deliveries of an offset already delivered, summed over the runs. \"–\": the target runs in the harness's process.\n\n" +
		"| workload | target | ok/runs | records/s | first record s | records/s after it | server µs/rec | client µs/rec | duplicates |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		server := "–"
		if r.ServerUsPerRec > 0 {
			server = fmt.Sprintf("%.2f", r.ServerUsPerRec)
		}
		fmt.Fprintf(b, "| %s | %s | %d/%d | %s | %.2f | %s | %s | %.2f | %d |\n", r.Workload, r.Target, r.OK, r.Runs,
			human(r.RecPerSec), r.FirstRecord, human(r.AfterFirst), server, r.ClientUsPerRec, r.Duplicates)
	}
}

// iggyCPUTable renders the CPU per record of client and server, with the
// iggy rows' server split into the gateway and its iggy-server, and the
// two ratios issue 30 sets targets for.
func (c *Comparison) iggyCPUTable(b *strings.Builder) {
	b.WriteString("\nCPU per record (µs, medians; client: the harness's franz-go process, or iggy-bench; " +
		"server: the target's processes, of which the gateway's and the iggy-server's for iggy; " +
		"a target with an iggy-server of its own is measured from quiet to quiet, so the server's background saving " +
		"after a step counts: \"after the step\" is that part). On a machine they share, throughput follows the sum. " +
		"\"gateway ÷ iggy-server\" divides the gateway's column by the iggy-server's; \"iggy-server ÷ native\" " +
		"the iggy-server's CPU per record fed by the gateway by the iggy-native row's, fed by iggy-bench; " +
		"\"iggy-server ÷ paced native\" the same against iggy-native-paced, iggy-bench held to the gateway's rate.\n\n" +
		"| workload | target | client | server | of which gateway | of which iggy-server | of which after the step | sum | gateway ÷ iggy-server | iggy-server ÷ native | iggy-server ÷ paced native |\n" +
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Rows {
		if r.OK == 0 || r.ClientUsPerRec+r.ServerUsPerRec <= 0 {
			continue
		}
		after := num(r.AfterUsPerRec, "%.3f")
		if r.IggyServerUsPerRec > 0 && r.AfterUsPerRec == 0 {
			after = "0"
		}
		if r.Unsettled > 0 {
			after += fmt.Sprintf(" (%d unsettled)", r.Unsettled)
		}
		fmt.Fprintf(b, "| %s | %s | %.3f | %.3f | %s | %s | %s | %.3f | %s | %s | %s |\n", r.Workload, r.Target,
			r.ClientUsPerRec, r.ServerUsPerRec, num(r.GatewayUsPerRec, "%.3f"), num(r.IggyServerUsPerRec, "%.3f"), after,
			r.ClientUsPerRec+r.ServerUsPerRec, num(r.GatewayPerServer, "%.2fx"), num(r.ServerPerNative, "%.2fx"), num(r.ServerPerPaced, "%.2fx"))
	}
}
