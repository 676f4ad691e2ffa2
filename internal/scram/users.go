package scram

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The users file (--sasl-users-file) holds one line per user and mechanism:
//
//	# comment
//	NAME MECHANISM ITERATIONS SALT STORED_KEY SERVER_KEY
//
// separated by single spaces, the last three in standard base64 with
// padding. NAME is UTF-8 without spaces or control characters. A user may
// have one line per mechanism. There is no password in it, only what
// RFC 5802 lets a server keep; still, whoever reads it can try to guess
// passwords offline, so it should be readable by the gateway only (the
// tool writes it 0600).

// maxUsersFile bounds what LoadFile reads (a users file is small).
const maxUsersFile = 16 << 20

// Users is a loaded users file: name -> mechanism -> credential. Read-only
// once loaded, so any goroutine may use it.
type Users struct {
	m map[string]map[Mechanism]Credential
}

// Lookup returns the credential of name for mech.
func (u *Users) Lookup(name string, mech Mechanism) (Credential, bool) {
	if u == nil {
		return Credential{}, false
	}
	c, ok := u.m[name][mech]
	return c, ok
}

// Each calls fn with every user's credentials, in no particular order.
func (u *Users) Each(fn func(name string, c Credential)) {
	if u == nil {
		return
	}
	for name, ms := range u.m {
		for _, c := range ms {
			fn(name, c)
		}
	}
}

// Len is the number of users.
func (u *Users) Len() int {
	if u == nil {
		return 0
	}
	return len(u.m)
}

// ValidName reports whether name may appear in the users file.
func ValidName(name string) bool {
	if name == "" || len(name) > 255 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Parse reads a users file. Errors name the line.
func Parse(r io.Reader) (*Users, error) {
	u := &Users{m: map[string]map[Mechanism]Credential{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxUsersFile))
	sc.Buffer(make([]byte, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " ")
		if len(f) != 6 {
			return nil, fmt.Errorf("line %d: want NAME MECHANISM ITERATIONS SALT STORED_KEY SERVER_KEY", n)
		}
		if !ValidName(f[0]) {
			return nil, fmt.Errorf("line %d: bad user name", n)
		}
		mech, ok := ParseMechanism(f[1])
		if !ok {
			return nil, fmt.Errorf("line %d: mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", n, f[1])
		}
		it, err := strconv.Atoi(f[2])
		if err != nil || it < MinIterations || it > MaxIterations {
			return nil, fmt.Errorf("line %d: iterations %q (want %d..%d)", n, f[2], MinIterations, MaxIterations)
		}
		size := mech.newHash()().Size()
		var keys [3][]byte
		for i := range keys {
			b, err := base64.StdEncoding.DecodeString(f[3+i])
			if err != nil || len(b) == 0 || i > 0 && len(b) != size {
				return nil, fmt.Errorf("line %d: field %d is not valid base64 of the right size", n, 4+i)
			}
			keys[i] = b
		}
		if u.m[f[0]] == nil {
			u.m[f[0]] = map[Mechanism]Credential{}
		}
		if _, dup := u.m[f[0]][mech]; dup {
			return nil, fmt.Errorf("line %d: %s has two %s lines", n, f[0], mech)
		}
		u.m[f[0]][mech] = Credential{Mech: mech, Iterations: it, Salt: keys[0], StoredKey: keys[1], ServerKey: keys[2]}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	return u, nil
}

// LoadFile reads and parses the users file at path.
func LoadFile(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// Line formats one users-file line.
func Line(name string, c Credential) string {
	e := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s %s %d %s %s %s", name, c.Mech, c.Iterations, e(c.Salt), e(c.StoredKey), e(c.ServerKey))
}

// NewCredential derives a credential for password with a fresh random salt.
func NewCredential(m Mechanism, password string, iterations int) (Credential, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, err
	}
	return Derive(m, password, salt, iterations)
}

// SetUser rewrites the users file at path with name's lines for mechs
// replaced by fresh credentials of password (other users' lines and
// comments are kept as they were). The file is written to a temporary file
// and renamed into place with mode 0600, so a reader never sees half of it.
func SetUser(path, name, password string, mechs []Mechanism, iterations int) error {
	if !ValidName(name) {
		return fmt.Errorf("bad user name %q: UTF-8 without spaces or control characters, at most 255 bytes", name)
	}
	var old []byte
	if b, err := os.ReadFile(path); err == nil {
		if _, err := Parse(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		old = b
	} else if !os.IsNotExist(err) {
		return err
	}
	var out []string
	replace := map[string]bool{}
	for _, m := range mechs {
		replace[m.String()] = true
	}
	for _, line := range strings.Split(string(old), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) >= 2 && f[0] == name && replace[f[1]] {
			continue
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		out = append(out, "# iggy-kafka-gateway SASL users: NAME MECHANISM ITERATIONS SALT STORED_KEY SERVER_KEY")
	}
	sort.SliceStable(mechs, func(i, j int) bool { return mechs[i] < mechs[j] })
	for _, m := range mechs {
		c, err := NewCredential(m, password, iterations)
		if err != nil {
			return err
		}
		out = append(out, Line(name, c))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sasl-users-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(strings.Join(out, "\n") + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
