package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSkipsCommentsAndSpace(t *testing.T) {
	t.Parallel()
	if got := Read(t, tempFile(t, "# a comment: 00 ff\n0a0b 0c\n\t0d\n")); string(got) != "\x0a\x0b\x0c\x0d" {
		t.Fatalf("read %x", got)
	}
}

func TestCheckEqualAndDifferent(t *testing.T) {
	t.Parallel()
	path := tempFile(t, "0102\n")
	if !Check(t, path, []byte{1, 2}) {
		t.Fatal("equal bytes reported different")
	}
	var rec recorder
	if Check(&rec, path, []byte{1, 3}) || !strings.Contains(rec.msg, "first difference at byte 1") {
		t.Fatalf("a difference not reported as one: %q", rec.msg)
	}
}

func TestDiffNamesTheFirstDifference(t *testing.T) {
	t.Parallel()
	got := make([]byte, 40)
	want := append(make([]byte, 20), 1)
	d := Diff(got, want)
	for _, s := range []string{"got 40 bytes, want 21", "at byte 20 (0x14)", "  got  000010: 00 00 00 00 00", "  want 000010: 00 00 00 00 01 -- --"} {
		if !strings.Contains(d, s) {
			t.Errorf("diff lacks %q:\n%s", s, d)
		}
	}
	if Diff(got, got) != "no difference" {
		t.Error("equal bytes differ")
	}
}

func TestCheckTextNamesTheLine(t *testing.T) {
	t.Parallel()
	path := tempFile(t, "go test fuzz v1\n[]byte(\"a\")\n")
	if !CheckText(t, path, []byte("go test fuzz v1\n[]byte(\"a\")\n")) {
		t.Fatal("equal text reported different")
	}
	var rec recorder
	if CheckText(&rec, path, []byte("go test fuzz v1\n[]byte(\"b\")\n")) || !strings.Contains(rec.msg, `line 2:`) {
		t.Fatalf("a stale file not reported as one: %q", rec.msg)
	}
}

// tempFile is the path of a new file in the test's temporary directory
// that holds content.
func tempFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "golden")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// recorder is a testing.TB that keeps the failure message instead of
// failing the test that uses it.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}
