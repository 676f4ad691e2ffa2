package iggy

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readHexFixture reads an annotated hex file: '#' starts a comment, hex
// digits may be split by spaces, and ".zero N" stands for N zero bytes.
func readHexFixture(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []byte
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == ".zero" {
			k, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			out = append(out, make([]byte, k)...)
			continue
		}
		b, err := hex.DecodeString(strings.Join(fields, ""))
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, b...)
	}
	return out
}

// vector is one entry of the shared golden vectors (PROTOCOL.md 17).
type vector struct {
	Name    string          `json:"name"`
	Kind    string          `json:"kind"`
	Hex     string          `json:"hex"`
	BodyHex string          `json:"body_hex"`
	Header  *vectorHeader   `json:"header"`
	Decoded json.RawMessage `json:"decoded"`
}

type vectorHeader struct {
	Request   uint64 `json:"request"`
	Operation uint8  `json:"operation"`
	Session   uint64 `json:"session"`
	ClientLo  string `json:"client_lo_u64"`
	ClientHi  string `json:"client_hi_u64"`
}

// vectorsPath is the shared vectors file, relative to this package.
const vectorsPath = "../../../shared/iggy/vectors.json"

// loadVectors returns the shared vectors by name, or skips when the file
// is absent: the project must pass from its own testdata alone.
func loadVectors(t testing.TB) map[string]vector {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if os.IsNotExist(err) {
		t.Skipf("%s not present; golden vectors from the official SDK not checked", vectorsPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]vector, len(vs))
	for _, v := range vs {
		m[v.Name] = v
	}
	return m
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// diffBytes describes the first difference of two byte strings.
func diffBytes(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d: got %02x want %02x (got %d bytes, want %d)", i, got[i], want[i], len(got), len(want))
		}
	}
	return fmt.Sprintf("length: got %d bytes, want %d", len(got), len(want))
}

func fixtureFiles(t testing.TB, dir string) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join("testdata", dir, "*.hex"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
	}
	return fs
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
