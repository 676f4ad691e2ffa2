package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// needKcat returns kcat's path or skips.
func needKcat(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		missing(t, "kcat", "install it: apt-get install kcat")
	}
	return p
}

// kcatListRefused runs kcat -L with the connection settings args and
// fails t unless kcat fails, with want in its stderr; what names the case.
func kcatListRefused(t testing.TB, kcat, what, want string, args ...string) {
	t.Helper()
	_, errOut, err := runCmd(t, 30*time.Second, "", kcat, append(args, "-L", "-m", "5")...)
	if err == nil {
		t.Fatalf("kcat -L %s succeeded:\n%s", what, errOut)
	}
	if !strings.Contains(errOut, want) {
		t.Errorf("kcat -L %s: want %q in its errors, got:\n%s", what, want, errOut)
	}
}

// kcatMeta is the part of `kcat -L -J` the tests read.
type kcatMeta struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Err        string `json:"error"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

func kcatList(t *testing.T, kcat, addr string, extra ...string) kcatMeta {
	t.Helper()
	out, errOut, err := runCmd(t, 30*time.Second, "", kcat, append([]string{"-b", addr, "-L", "-J"}, extra...)...)
	if err != nil {
		t.Fatalf("kcat -L: %v\nstderr: %s", err, errOut)
	}
	var m kcatMeta
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("kcat -L -J output: %v\n%s", err, out)
	}
	return m
}

// kcatInput is n key:value lines, values with spaces and non-ASCII text.
func kcatInput(n int) (input string, keys, values []string) {
	var b strings.Builder
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("order-%d", i%5)
		v := fmt.Sprintf("item %d: naïve café ✓ %s", i, strings.Repeat("z", i%40))
		keys, values = append(keys, k), append(values, v)
		b.WriteString(k + ":" + v + "\n")
	}
	return b.String(), keys, values
}

// kcatConsumeLines reads topic from the beginning to its end with the
// format key|headers|value and returns the lines.
func kcatConsumeLines(t *testing.T, kcat, addr, topic string) []string {
	t.Helper()
	out, errOut, err := runCmd(t, 30*time.Second, "", kcat,
		"-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", "%k|%h|%s\n")
	if err != nil {
		t.Fatalf("kcat -C: %v\nstderr: %s", err, errOut)
	}
	out = strings.TrimSuffix(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// checkKcatLines fails t unless lines (from kcatConsumeLines) are
// key|headers|value of keys and values in order.
func checkKcatLines(t *testing.T, lines, keys []string, headers string, values []string) {
	t.Helper()
	if len(lines) != len(keys) {
		t.Fatalf("read %d records, want %d:\n%s", len(lines), len(keys), strings.Join(lines, "\n"))
	}
	for i, l := range lines {
		if want := keys[i] + "|" + headers + "|" + values[i]; l != want {
			t.Fatalf("record %d:\n got %q\nwant %q", i, l, want)
		}
	}
}

// kcatProduce runs kcat -P with extra arguments and stdin.
func kcatProduce(t *testing.T, kcat, addr, topic, stdin string, extra ...string) {
	t.Helper()
	args := append([]string{"-b", addr, "-P", "-t", topic}, extra...)
	if _, errOut, err := runCmd(t, 60*time.Second, stdin, kcat, args...); err != nil {
		t.Fatalf("kcat -P %v: %v\nstderr: %s", extra, err, errOut)
	}
}

// kcatLine is one record as kcatConsumeAll reads it.
type kcatLine struct {
	Partition int32
	Offset    int64
	KeyLen    int
	Key       string
	TimeMs    int64
	Headers   string
	ValueLen  int
	Value     string
}

// kcatRecordEnd ends every record kcatConsumeAll asks kcat to print: values
// may hold newlines.
const kcatRecordEnd = "<<end of record>>\n"

// kcatConsumeAll reads topic from the start to its end, with the headers
// (%h, which has no escaping: only for headers without '|' or the record
// end) when withHeaders.
func kcatConsumeAll(t *testing.T, kcat, addr, topic string, withHeaders bool) []kcatLine {
	t.Helper()
	format := "%p|%o|%K|%k|%T|%S|"
	if withHeaders {
		format += "%h"
	}
	format += "|%s" + kcatRecordEnd
	out, errOut, err := runCmd(t, 60*time.Second, "", kcat,
		"-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", format)
	if err != nil {
		t.Fatalf("kcat -C: %v\nstderr: %s", err, errOut)
	}
	var got []kcatLine
	for l := range strings.SplitSeq(strings.TrimSuffix(out, kcatRecordEnd), kcatRecordEnd) {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "|", 8)
		if len(f) != 8 {
			t.Fatalf("bad kcat line %q", l)
		}
		var k kcatLine
		p, err1 := strconv.Atoi(f[0])
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		kl, err3 := strconv.Atoi(f[2])
		ts, err4 := strconv.ParseInt(f[4], 10, 64)
		vl, err5 := strconv.Atoi(f[5])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
			t.Fatalf("bad kcat line %q", l)
		}
		k.Partition, k.Offset, k.KeyLen, k.Key, k.TimeMs, k.ValueLen, k.Headers, k.Value = int32(p), o, kl, f[3], ts, vl, f[6], f[7]
		got = append(got, k)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}

// kcatHeaders is how kcat's %h prints headers: name=value, comma-separated.
func kcatHeaders(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Key+"="+string(h.Value))
	}
	return strings.Join(parts, ",")
}

// kcatRoundTrip produces ten keyed records to topic with args and reads
// them back.
func kcatRoundTrip(t *testing.T, kcat, topic string, args []string) {
	t.Helper()
	input, _, values := kcatInput(10)
	_, errOut, err := runCmd(t, 60*time.Second, input, kcat, append(args, "-P", "-t", topic, "-K:")...)
	if err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, errOut)
	}
	out, errOut, err := runCmd(t, 60*time.Second, "", kcat,
		append(args, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%s\n")...)
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, errOut)
	}
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "|") != strings.Join(values, "|") {
		t.Fatalf("kcat consumed %q, want %q", got, values)
	}
}
