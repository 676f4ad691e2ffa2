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

// TestCrashChild appends with SyncAlways until it is killed, printing
// "ack <base> <count> <tag>" after each Append returned, which is the
// promise under test: an acknowledged write survives kill -9.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("crash child; run by TestCrashKeepsAcknowledgedWrites")
	}
	s, err := Open(dir, Options{Sync: SyncAlways, Logger: quietLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "crash", 1); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		n := 1 + i%5
		tag := fmt.Sprintf("b%d", i)
		base, err := s.Append(ctx, "kafka", "crash", 0, makeBatch(t, tag, n, 1))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		// One write(2) per line, unbuffered: the line exists only once
		// Append returned, and the parent sees it even after SIGKILL.
		fmt.Printf("ack %d %d %s\n", base, n, tag)
	}
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test in -short mode")
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
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
	checkAcks(t, dir, acks)
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
	msgs := pollAll(t, s, "crash", 0, 0)
	byOffset := make(map[uint64]string, len(msgs))
	for _, m := range msgs {
		byOffset[m.offset] = m.payload
	}
	st, _ := s.Partition(ctx, "kafka", "crash", 0)
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
	_ = s.Poll(ctx, "kafka", "crash", 0, 0, 1<<30, func(b []byte) bool {
		_, err = bridge.VerifyIggyBatch(b)
		return err == nil
	})
	if err != nil {
		t.Fatalf("recovered batch fails verification: %v", err)
	}
}
