// Package golden is the one way tests pin bytes in files under testdata/:
// a hex file holds the bytes a test must build (a wire response, a
// batch), Check compares them and names the first byte that differs, and
// `go test -update` rewrites the files from what the tests built. Test
// code only: it registers the -update flag of the test binary that
// imports it.
package golden

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from what the tests build")

// Updating reports whether the test binary runs with -update, for a test
// that keeps a golden file of its own format (CheckText).
func Updating() bool { return *update }

// Check compares got with the hex file at path and reports a difference
// with tb.Errorf; with -update it writes got there instead (one line of
// lower-case hex). It says whether they were equal, so the caller can log
// what it built. The test's goroutine (a missing file is tb.Fatalf).
func Check(tb testing.TB, path string, got []byte) bool {
	tb.Helper()
	if *update {
		Write(tb, path, []byte(hex.EncodeToString(got)+"\n"))
		return true
	}
	want, err := read(path)
	if err != nil {
		tb.Fatalf("%v (run with -update to create)", err)
	}
	if bytes.Equal(got, want) {
		return true
	}
	tb.Errorf("%s differs (run with -update to rewrite it):\n%s", path, Diff(got, want))
	return false
}

// Read returns the bytes of the hex file at path: lines that start with #
// are comments, white space is ignored. For fixtures made elsewhere,
// which -update must never rewrite. The test's goroutine.
func Read(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := read(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func read(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			sb.WriteString(strings.Join(strings.Fields(line), ""))
		}
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// CheckText compares got with the file at path, byte for byte, and
// reports a difference with tb.Errorf; with -update it writes got there
// instead. For golden files in a format of their own (a fuzz corpus
// entry). The test's goroutine.
func CheckText(tb testing.TB, path string, got []byte) bool {
	tb.Helper()
	if *update {
		Write(tb, path, got)
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Errorf("%v (run with -update to create)", err)
		return false
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s is stale (run with -update to rewrite it): %s", path, lineDiff(string(got), string(want)))
		return false
	}
	return true
}

// Write writes data to path, making its directory first. The test's
// goroutine.
func Write(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Diff describes how got differs from want: both lengths, the offset of
// the first byte that differs, both dumped 16 bytes a row from the row
// that holds it, then both in full as hex.
func Diff(got, want []byte) string {
	at := 0
	for at < len(got) && at < len(want) && got[at] == want[at] {
		at++
	}
	if at == len(got) && at == len(want) {
		return "no difference"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "got %d bytes, want %d; first difference at byte %d (%#x)\n", len(got), len(want), at, at)
	const row, rows = 16, 4
	for r := at / row * row; r < (at/row+rows)*row && (r < len(got) || r < len(want)); r += row {
		fmt.Fprintf(&sb, "  got  %06x: %s\n", r, dumpRow(got, r, row))
		fmt.Fprintf(&sb, "  want %06x: %s\n", r, dumpRow(want, r, row))
	}
	fmt.Fprintf(&sb, " got %x\nwant %x", got, want)
	return sb.String()
}

// dumpRow is b[from:from+n] as spaced hex, -- past b's end.
func dumpRow(b []byte, from, n int) string {
	parts := make([]string, n)
	for i := range parts {
		if from+i < len(b) {
			parts[i] = fmt.Sprintf("%02x", b[from+i])
		} else {
			parts[i] = "--"
		}
	}
	return strings.Join(parts, " ")
}

// lineDiff names the first line in which got and want differ and quotes
// both versions of it.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(ls []string) string {
		if i < len(ls) {
			return fmt.Sprintf("%q", ls[i])
		}
		return "(none)"
	}
	return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, line(g), line(w))
}
