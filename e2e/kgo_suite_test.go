package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// franz-go's own integration suite (the tests of github.com/twmb/franz-go/pkg/kgo,
// at the version go.mod requires) run against the gateway binary: with
// KGO_SEEDS set they produce, consume, run consumer-group chains with every
// balancer (classic and KIP-848, static members), purge, pause, add
// partitions, and so on, against a real cluster. `go test` builds that
// package from the module cache in module mode with our go.mod, so nothing
// else is installed. The test parses `go test -json` and compares the
// outcome of every top-level test with the lists below; a failure or skip
// not listed fails, and so does a listed one that now passes or is no
// longer there, so the lists stay true.

// kgoExpectedFail are the suite's tests that fail against this gateway by
// design, each with why.
var kgoExpectedFail = map[string]string{
	// Both need an internal topic: a topic created with the kfake-only
	// config kfake.is_internal, or else __consumer_offsets listed by
	// Metadata with is_internal after a FindCoordinator. The gateway has
	// no internal topics (committed offsets live in the store, not in a
	// topic) and never makes one of Kafka's internal names into an
	// ordinary topic (docs/SCOPE.md, Metadata), so the tests' setup fails.
	"TestConsumeRegex":           "no internal topic: Metadata does not list __consumer_offsets",
	"Test848RegexBrokerResolves": "no internal topic: Metadata does not list __consumer_offsets",
	// The same setup, for a share group's regex subscription.
	"TestConsumeRegexShareSkipsInternal": "no internal topic: Metadata does not list __consumer_offsets",
}

// kgoExpectedSkip are the tests that skip themselves against this gateway.
var kgoExpectedSkip = map[string]string{
	// It needs a broker without Produce v2; the gateway advertises Produce
	// from v0 (KAFKA-18659: librdkafka needs it) and refuses v0-2 per
	// partition.
	"TestIssueProduceBrokerTooOldFailsRecords": "Produce v0-2 are advertised (refused per partition)",
	// OAUTHBEARER is not a mechanism of this gateway.
	"TestOAuthAuth": "no OAUTHBEARER",
}

// kgoNotRun are left out with -skip, with why (none: TestTxnEtl runs
// against the gateway's transactions, --transactions enabled).
var kgoNotRun = map[string]string{}

// kgoSuiteRecords bounds the records TestGroupETL produces and its six
// consumer chains read (the suite's default is 500000).
const kgoSuiteRecords = 50000

func TestFranzGoIntegrationSuite(t *testing.T) {
	t.Parallel()
	if b := os.Getenv(backendEnv); b == "iggy" {
		// The imitation server adds nothing here that the real server
		// does not test, and the run costs minutes per pass.
		t.Skipf("runs on the default and iggy-server passes; this pass is %s=%s", backendEnv, b)
	}
	if testing.Short() {
		t.Skip("the franz-go suite takes minutes; not with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		missing(t, "the go command", "install Go (the suite is built from the module cache with `go test`)")
	}

	// A SASL_PLAINTEXT listener beside the plain one serves the suite's
	// SCRAM tests (KGO_TEST_SCRAM_SEEDS, KGO_TEST_SCRAM).
	bin := gatewayBinary(t)
	users := filepath.Join(t.TempDir(), "users")
	if out, errOut, err := runCmd(t, 30*time.Second, "kgo-secret\n", bin, "sasl-user", "add", "--file", users, "kgo"); err != nil {
		t.Fatalf("sasl-user add: %v\n%s%s", err, out, errOut)
	}
	plain := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	sasl := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	spawnListeners(t, plain,
		"--listeners=PLAINTEXT://"+plain+",SASL_PLAINTEXT://"+sasl,
		"--sasl-mechanisms=SCRAM-SHA-256", "--sasl-users-file="+users,
		// The suite runs hundreds of clients at once from 127.0.0.1: lift
		// the per-address cap (Kafka has none by default).
		"--max-connections=8192", "--max-connections-per-addr=8192",
		// TestTxnEtl's transactional producer and its six consumer
		// chains (GroupTransactSession, read_committed) need the
		// transaction coordinator.
		"--transactions=enabled",
		"--log-level=info")

	skip := make([]string, 0, len(kgoNotRun))
	for name := range kgoNotRun {
		skip = append(skip, "^"+name+"$")
	}
	sort.Strings(skip)
	out := filepath.Join(t.TempDir(), "kgo.json")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "test", "-json", "-count=1", "-timeout=10m",
		"-parallel=4", "-skip="+strings.Join(skip, "|"), "github.com/twmb/franz-go/pkg/kgo")
	cmd.Dir = ".." // our module: its go.mod picks the franz-go version
	cmd.Env = append(childEnv(),
		"KGO_SEEDS="+plain,
		"KGO_TEST_RF=1", // one broker
		"KGO_TEST_RECORDS="+strconv.Itoa(kgoSuiteRecords),
		"KGO_TEST_SCRAM_SEEDS="+sasl,
		"KGO_TEST_SCRAM=kgo:kgo-secret:256",
	)
	cmd.Stdout = f
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("franz-go suite ran in %v", time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		t.Errorf("the suite did not end within its deadline")
	}

	res, err := parseTestJSON(out)
	if err != nil {
		t.Fatalf("reading the suite's output: %v (go test: %v; stderr:\n%s)", err, runErr, tail(stderr.String(), 50))
	}
	if len(res.outcome) == 0 {
		t.Fatalf("the suite reported no tests (go test: %v); stderr:\n%s", runErr, tail(stderr.String(), 50))
	}
	counts := map[string]int{}
	var problems []string
	for _, name := range res.order {
		got := res.outcome[name]
		counts[got]++
		_, wantFail := kgoExpectedFail[name]
		_, wantSkip := kgoExpectedSkip[name]
		switch {
		case got == "fail" && !wantFail:
			problems = append(problems, fmt.Sprintf("%s failed:\n%s", name, tail(res.output[name], 40)))
		case got == "skip" && !wantSkip:
			problems = append(problems, fmt.Sprintf("%s skipped (not expected to):\n%s", name, tail(res.output[name], 10)))
		case got == "pass" && (wantFail || wantSkip):
			problems = append(problems, fmt.Sprintf("%s passed, but is listed as expected to fail or skip: take it off the list", name))
		case got == "":
			problems = append(problems, fmt.Sprintf("%s never ended (the run stopped early):\n%s", name, tail(res.output[name], 40)))
		}
	}
	for _, list := range []map[string]string{kgoExpectedFail, kgoExpectedSkip} {
		for name := range list {
			if _, ok := res.outcome[name]; !ok {
				problems = append(problems, name+" is listed but did not run (renamed or removed in franz-go?)")
			}
		}
	}
	for name := range kgoNotRun {
		if got, ok := res.outcome[name]; ok {
			problems = append(problems, fmt.Sprintf("%s ran (%s) although -skip leaves it out", name, got))
		}
	}
	if res.packageResult != "pass" && res.packageResult != "fail" {
		problems = append(problems, fmt.Sprintf("the package ended %q (go test: %v):\n%s", res.packageResult, runErr, tail(res.output[""], 40)))
	}
	t.Logf("franz-go pkg/kgo: %d pass, %d fail, %d skip, %d left out by -skip", counts["pass"], counts["fail"], counts["skip"], len(kgoNotRun))
	for _, p := range problems {
		t.Error(p)
	}
}

// testJSON is what parseTestJSON keeps of a `go test -json` stream: the
// last action of every top-level test, in the order they started, and the
// output of each ("" is the package's own).
type testJSON struct {
	order         []string
	outcome       map[string]string // "pass", "fail", "skip", or "" if it never ended
	output        map[string]string
	packageResult string
}

func parseTestJSON(path string) (*testJSON, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := &testJSON{outcome: map[string]string{}, output: map[string]string{}}
	outs := map[string]*strings.Builder{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go build output may precede the stream
		}
		var ev struct {
			Action string
			Test   string
			Output string
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("%v in %q", err, line)
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		switch ev.Action {
		case "run":
			if _, ok := res.outcome[top]; !ok && top != "" {
				res.outcome[top] = ""
				res.order = append(res.order, top)
			}
		case "output":
			b := outs[top]
			if b == nil {
				b = &strings.Builder{}
				outs[top] = b
			}
			if b.Len() < 4<<20 { // enough for a tail
				b.WriteString(ev.Output)
			}
		case "pass", "fail", "skip":
			switch {
			case ev.Test == "":
				res.packageResult = ev.Action
			case ev.Test == top:
				res.outcome[top] = ev.Action
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for name, b := range outs {
		res.output[name] = b.String()
	}
	return res, nil
}
