package embedded

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// crashDirEnv names the store directory the crash child writes to; the
// child test skips when it is unset, so a normal run never starts it alone.
const crashDirEnv = "EMBEDDED_CRASH_CHILD_DIR"

// openCrashChild opens, with SyncAlways, the store in the directory a
// crash test (parent) passed in env; without it the test is not a crash
// child and skips.
func openCrashChild(t *testing.T, env, parent string) *Store {
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("crash child; run by " + parent)
	}
	s, err := Open(dir, Options{Sync: SyncAlways, Logger: quietLogger()})
	exitOnError(err)
	return s
}

// exitOnError ends a crash child on err, printing it for the parent.
func exitOnError(err error) {
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
}

// TestCrashChild appends with SyncAlways until it is killed, printing
// "ack <base> <count> <tag>" after each Append returned, which is the
// promise under test: an acknowledged write survives kill -9.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	s := openCrashChild(t, crashDirEnv, "TestCrashKeepsAcknowledgedWrites")
	_, err := s.CreateTopic(ctx, "kafka", "crash", 1)
	exitOnError(err)
	fmt.Println("ready")
	for i := 0; ; i++ {
		n := 1 + i%5
		tag := fmt.Sprintf("b%d", i)
		base, err := s.Append(ctx, "kafka", "crash", 0, makeBatch(t, tag, n, 1))
		exitOnError(err)
		// One write(2) per line, unbuffered: the line exists only once
		// Append returned, and the parent sees it even after SIGKILL.
		fmt.Printf("ack %d %d %s\n", base, n, tag)
	}
}

// TestCrashChildSegments is TestCrashChild with three partitions written
// at once and 16 KiB segments, so segments roll (sealed, indexed, synced)
// all the time: "ack <partition> <base> <count> <tag>".
func TestCrashChildSegments(t *testing.T) {
	t.Parallel()
	s := openCrashChild(t, crashSegDirEnv, "TestCrashKeepsAcknowledgedWritesSegments")
	_, err := s.CreateTopicWithConfigs(ctx, "kafka", "crash", 3, bridge.TopicConfigs{"segment.bytes": "16384"})
	exitOnError(err)
	fmt.Println("ready")
	for p := int32(0); p < 3; p++ {
		go func() {
			for i := 0; ; i++ {
				n := 1 + (i+int(p))%7
				tag := fmt.Sprintf("p%db%d", p, i)
				base, err := s.Append(ctx, "kafka", "crash", p, makeBatch(t, tag, n, 1))
				exitOnError(err)
				fmt.Printf("ack %d %d %d %s\n", p, base, n, tag)
			}
		}()
	}
	select {}
}

const crashSegDirEnv = "EMBEDDED_CRASH_SEGMENTS_CHILD_DIR"

// TestCrashKeepsAcknowledgedWritesSegments kills TestCrashChildSegments
// and checks every partition as TestCrashKeepsAcknowledgedWrites does.
func TestCrashKeepsAcknowledgedWritesSegments(t *testing.T) {
	// Not parallel: its child must roll segments within a second of real time, which load from parallel tests would slow.
	dir, acks := runCrashChild(t, "TestCrashChildSegments", crashSegDirEnv)
	byPart := map[int32][]string{}
	for _, a := range acks {
		var p int32
		var base, n uint64
		var tag string
		if _, err := fmt.Sscanf(a, "ack %d %d %d %s", &p, &base, &n, &tag); err != nil {
			t.Fatalf("bad ack line %q", a)
		}
		byPart[p] = append(byPart[p], fmt.Sprintf("ack %d %d %s", base, n, tag))
	}
	s := openStore(t, dir, SyncAlways)
	defer s.Close()
	info, _ := s.Topic(ctx, "kafka", "crash")
	for p := int32(0); p < 3; p++ {
		if len(byPart[p]) == 0 {
			t.Fatalf("nothing acknowledged on partition %d", p)
		}
		checkPartitionAcks(t, s, p, byPart[p])
	}
	if n := len(segmentFiles(t, dir, info.ID, 0)); n < 3 {
		t.Fatalf("%d segments on partition 0: rolls not exercised", n)
	}
	t.Logf("%d appends acknowledged on 3 partitions, %d segments on partition 0", len(acks), len(segmentFiles(t, dir, info.ID, 0)))
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	dir, acks := runCrashChild(t, "TestCrashChild", crashDirEnv)
	checkAcks(t, dir, acks)
}

// runCrashChild starts the test binary's child test, lets it append for a
// second, SIGKILLs it and returns its directory and acknowledgement lines.
func runCrashChild(t *testing.T, child, env string) (string, []string) {
	if testing.Short() {
		t.Skip("crash test in -short mode")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1<<16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitReady(t, lines)
	// The child appends for a second of real time, enough to roll
	// segments, before it is killed mid-write: the crash is the test.
	time.Sleep(time.Second)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	var acks []string
	for l := range lines {
		if strings.HasPrefix(l, "error") {
			t.Fatalf("child: %s", l)
		}
		if strings.HasPrefix(l, "ack ") {
			acks = append(acks, l)
		}
	}
	_ = cmd.Wait()
	if len(acks) == 0 {
		t.Fatal("child acknowledged nothing before it was killed")
	}
	t.Logf("child acknowledged %d appends before SIGKILL", len(acks))
	return dir, acks
}

// waitReady waits for the child's "ready" line (it has created the topic).
func waitReady(t *testing.T, lines chan string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("child exited before it was ready")
			}
			if l == "ready" {
				return
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child: %s", l)
			}
		case <-timeout:
			t.Fatal("child not ready after 30s")
		}
	}
}

// checkAcks reopens the store and reads every acknowledged batch back.
func checkAcks(t *testing.T, dir string, acks []string) {
	s := openStore(t, dir, SyncAlways)
	defer s.Close()
	checkPartitionAcks(t, s, 0, acks)
}

// checkPartitionAcks reads every acknowledged batch of a partition back
// ("ack <base> <count> <tag>" lines), byte for byte, and checks that the
// recovered partition has no gap and verifies.
func checkPartitionAcks(t *testing.T, s *Store, part int32, acks []string) {
	t.Helper()
	msgs := pollAll(t, s, "crash", part, 0)
	byOffset := make(map[uint64]string, len(msgs))
	for _, m := range msgs {
		byOffset[m.offset] = m.payload
	}
	st, _ := s.Partition(ctx, "kafka", "crash", part)
	for _, a := range acks {
		var base, n uint64
		var tag string
		if _, err := fmt.Sscanf(a, "ack %d %d %s", &base, &n, &tag); err != nil {
			t.Fatalf("bad ack line %q", a)
		}
		if base+n > st.Next {
			t.Fatalf("acknowledged %q lies beyond the recovered watermark %d", a, st.Next)
		}
		for j := uint64(0); j < n; j++ {
			if got, want := byOffset[base+j], fmt.Sprintf("%s-%d", tag, j); got != want {
				t.Fatalf("offset %d: %q, want %q (ack %q)", base+j, got, want, a)
			}
		}
	}
	// Whatever survived beyond the acks must still be gap-free.
	for i, m := range msgs {
		if m.offset != uint64(i) {
			t.Fatalf("recovered partition has a gap at %d", i)
		}
	}
	var err error
	_ = s.Poll(ctx, "kafka", "crash", part, 0, 1<<30, func(b []byte) bool {
		_, err = bridge.VerifyIggyBatch(b)
		return err == nil
	})
	if err != nil {
		t.Fatalf("recovered batch fails verification: %v", err)
	}
}
