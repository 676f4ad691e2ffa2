package iggy

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// TestServerRestartsTwiceOverATornSegment: a kill -9 of the server in the
// middle of writing a batch leaves a torn tail on the segment (made here by
// hand, the same bytes a kill at that moment leaves). The server's own
// recovery starts over it once but then writes after the torn bytes, and
// refuses the partition at the next restart; the real-server harness cuts
// the torn tail before every start, so the server restarts every time and
// every acknowledged message stays readable.
func TestServerRestartsTwiceOverATornSegment(t *testing.T) {
	// Serial: it kills and restarts a server and must see it back on the port it freed.
	srv := iggyreal.StartPrivate(t)
	st, err := Open(context.Background(), testOptions(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.CreateTopic(ctx, "kafka", "torn", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "kafka", "torn", 0, testBatch(t, "a", 0, 3)); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	appendTornBatch(t, srv.DataDir())
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("first restart over the torn segment: %v", err)
	}
	if base, err := st.Append(ctx, "kafka", "torn", 0, testBatch(t, "b", 3, 2)); err != nil || base != 3 {
		t.Fatalf("send after the first restart: stored at %d, %v; want 3", base, err)
	}
	srv.Kill()
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("second restart: %v", err)
	}
	got := pollAll(t, st, "kafka", "torn", 0, 0, 1<<20)
	if want := "a-0 a-1 a-2 b-3 b-4"; strings.Join(got.payloads, " ") != want {
		t.Fatalf("after the restarts the partition holds %q, want %s", got.payloads, want)
	}
}

// appendTornBatch appends to the one segment under dataDir the start of a
// batch whose header promises more bytes than follow.
func appendTornBatch(t *testing.T, dataDir string) {
	t.Helper()
	var logs []string
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") && strings.Contains(p, "/partitions/") {
			logs = append(logs, p)
		}
		return err
	})
	if err != nil || len(logs) != 1 {
		t.Fatalf("segments under %s: %q, %v; want one", dataDir, logs, err)
	}
	torn := make([]byte, 300)
	torn[32], torn[33] = 0x00, 0x04 // whole length 1024 LE: 724 bytes never arrive
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
}
