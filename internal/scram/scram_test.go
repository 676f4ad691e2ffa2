package scram

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RFC 7677 section 3: the SCRAM-SHA-256 example exchange, user "user",
// password "pencil". The server side here must accept the client's proof
// and answer the RFC's server signature.
func TestRFC7677Vector(t *testing.T) {
	t.Parallel()
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := Derive(SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := ParseClientFirst([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(SHA256)
	if _, err := s.First(cf, cred, []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The RFC's server nonce is not base64 of bytes: set it as sent.
	s.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	s.serverMsg = "r=" + s.nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	final := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	out, err := s.Final([]byte(final))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(out) != want {
		t.Fatalf("server-final %q, want %q", out, want)
	}
	if !cred.Verify("pencil") || cred.Verify("pencil2") {
		t.Fatal("Verify")
	}
}

// A full exchange against a client computed here, for both hashes; a
// tampered nonce, proof or binding fails with its reason; a fake
// credential never verifies and keeps its salt across calls.
func TestExchange(t *testing.T) {
	t.Parallel()
	for _, m := range []Mechanism{SHA256, SHA512} {
		cred, err := NewCredential(m, "pw", DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		run := func(mutate func(nonce, binding string, proof []byte) (string, string, []byte)) ([]byte, error) {
			cf, err := ParseClientFirst([]byte("n,,n=al=2Cice,r=abcdef"))
			if err != nil || cf.User != "al,ice" {
				t.Fatalf("client-first: %+v %v", cf, err)
			}
			s := NewServer(m)
			sf, err := s.First(cf, cred, []byte("0123456789"))
			if err != nil {
				t.Fatal(err)
			}
			nonce := strings.TrimPrefix(strings.Split(string(sf), ",")[0], "r=")
			h := m.newHash()
			binding := "biws"
			nonce, binding, _ = mutate(nonce, binding, nil)
			without := "c=" + binding + ",r=" + nonce
			auth := cf.Bare + "," + string(sf) + "," + without
			// ClientKey from the password, as a client computes it.
			salted := pbkdf(m, "pw", cred.Salt, cred.Iterations)
			ck := hmacSum(h, salted, []byte("Client Key"))
			sig := hmacSum(h, cred.StoredKey, []byte(auth))
			proof := make([]byte, len(ck))
			for i := range ck {
				proof[i] = ck[i] ^ sig[i]
			}
			_, _, proof = mutate(nonce, binding, proof)
			out, err := s.Final([]byte(without + ",p=" + base64.StdEncoding.EncodeToString(proof)))
			if err == nil {
				want := "v=" + base64.StdEncoding.EncodeToString(hmacSum(h, hmacSum(h, salted, []byte("Server Key")), []byte(auth)))
				if string(out) != want {
					t.Fatalf("server signature %q, want %q", out, want)
				}
			}
			return out, err
		}
		same := func(n, b string, p []byte) (string, string, []byte) { return n, b, p }
		if _, err := run(same); err != nil {
			t.Fatalf("%s: good exchange: %v", m, err)
		}
		if _, err := run(func(n, b string, p []byte) (string, string, []byte) { return "abcdef" + n, b, p }); err != nil {
			t.Fatalf("%s: a nonce with the client nonce repeated in front (librdkafka): %v", m, err)
		}
		for name, c := range map[string]struct {
			mut  func(n, b string, p []byte) (string, string, []byte)
			want error
		}{
			"nonce":   {func(n, b string, p []byte) (string, string, []byte) { return n + "x", b, p }, ErrNonce},
			"short":   {func(n, b string, p []byte) (string, string, []byte) { return "abc", b, p }, ErrNonce},
			"binding": {func(n, b string, p []byte) (string, string, []byte) { return n, "eSws", p }, ErrBinding},
			"proof": {func(n, b string, p []byte) (string, string, []byte) {
				if p != nil {
					p[3] ^= 0x40
				}
				return n, b, p
			}, ErrProof},
			"proof length": {func(n, b string, p []byte) (string, string, []byte) {
				if p != nil {
					p = p[:5]
				}
				return n, b, p
			}, ErrProof},
		} {
			if _, err := run(c.mut); !errors.Is(err, c.want) {
				t.Errorf("%s: %s: got %v, want %v", m, name, err, c.want)
			}
		}
		f1, f2 := Fake(m, []byte("k"), "ghost"), Fake(m, []byte("k"), "ghost")
		if !bytes.Equal(f1.Salt, f2.Salt) || bytes.Equal(f1.Salt, Fake(m, []byte("k"), "ghost2").Salt) {
			t.Errorf("%s: fake salts must be stable per name and differ between names", m)
		}
		if f1.Verify("") || f1.Verify("ghost") || f1.Iterations != DefaultIterations {
			t.Errorf("%s: a fake credential verified", m)
		}
	}
}

func pbkdf(m Mechanism, pw string, salt []byte, it int) []byte {
	h := m.newHash()
	// PBKDF2 with one block (dkLen = hash size) is Hi() of RFC 5802.
	u := hmacSum(h, []byte(pw), append(append([]byte{}, salt...), 0, 0, 0, 1))
	out := append([]byte(nil), u...)
	for i := 1; i < it; i++ {
		u = hmacSum(h, []byte(pw), u)
		for j := range out {
			out[j] ^= u[j]
		}
	}
	return out
}

func TestParseClientFirst(t *testing.T) {
	t.Parallel()
	good := map[string]ClientFirst{
		"n,,n=user,r=abc":             {GS2Header: "n,,", User: "user", Nonce: "abc", Bare: "n=user,r=abc"},
		"y,,n=user,r=abc":             {GS2Header: "y,,", User: "user", Nonce: "abc", Bare: "n=user,r=abc"},
		"n,a=user,n=user,r=abc":       {GS2Header: "n,a=user,", Authzid: "user", User: "user", Nonce: "abc", Bare: "n=user,r=abc"},
		"n,,n=u=3Dv,r=abc,x=1":        {GS2Header: "n,,", User: "u=v", Nonce: "abc", Bare: "n=u=3Dv,r=abc,x=1"},
		"n,,n=u,r=abc,tokenauth=true": {GS2Header: "n,,", User: "u", Nonce: "abc", Bare: "n=u,r=abc,tokenauth=true", TokenAuth: true},
	}
	for in, want := range good {
		got, err := ParseClientFirst([]byte(in))
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]error{
		"":                                     ErrMalformed,
		"n,":                                   ErrMalformed,
		"x,,n=u,r=a":                           ErrMalformed,
		"p=tls,,n=u,r=a":                       ErrChannelBinding,
		"n,,m=ext,n=u,r=a":                     ErrExtension,
		"n,,n=u":                               ErrMalformed,
		"n,,r=a,n=u":                           ErrMalformed,
		"n,,n=,r=a":                            ErrMalformed,
		"n,,n=u,r=":                            ErrMalformed,
		"n,,n=u=2,r=a":                         ErrMalformed,
		"n,,n=u=41,r=a":                        ErrMalformed,
		"n,,n=u,r=a b":                         ErrMalformed,
		"n,a=other,n=u,r=a":                    ErrAuthzid,
		"n,b=x,n=u,r=a":                        ErrMalformed,
		"n,,n=u,r=a,=x":                        ErrMalformed,
		"n,,n=u,r=" + strings.Repeat("a", 257): ErrMalformed,
	}
	for in, want := range bad {
		if _, err := ParseClientFirst([]byte(in)); !errors.Is(err, want) {
			t.Errorf("%q: got %v, want %v", in, err, want)
		}
	}
}

func TestParseClientFinal(t *testing.T) {
	t.Parallel()
	cf, err := ParseClientFinal([]byte("c=biws,r=abc,p=AAEC"))
	if err != nil || cf.Binding != "biws" || cf.Nonce != "abc" || !bytes.Equal(cf.Proof, []byte{0, 1, 2}) || cf.WithoutProof != "c=biws,r=abc" {
		t.Fatalf("%+v %v", cf, err)
	}
	for _, in := range []string{"", "c=biws,r=abc", "c=biws,r=abc,p=", "c=biws,r=abc,p=!!", "r=abc,c=biws,p=AAEC", "c=biws,p=AAEC", "c=biws,r=a,x,p=AAEC"} {
		if _, err := ParseClientFinal([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: got %v, want ErrMalformed", in, err)
		}
	}
}

// Messages out of order are refused.
func TestServerState(t *testing.T) {
	t.Parallel()
	s := NewServer(SHA256)
	if _, err := s.Final([]byte("c=biws,r=a,p=AAEC")); !errors.Is(err, ErrState) {
		t.Fatalf("Final first: %v", err)
	}
	cf, _ := ParseClientFirst([]byte("n,,n=u,r=a"))
	if _, err := s.First(cf, Fake(SHA256, nil, "u"), []byte("n")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.First(cf, Fake(SHA256, nil, "u"), []byte("n")); !errors.Is(err, ErrState) {
		t.Fatalf("First twice: %v", err)
	}
}

// The users file: SetUser writes 0600 with the salted credential only,
// keeps other lines, replaces the user's; Parse refuses damaged lines.
func TestUsersFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users")
	if err := SetUser(path, "alice", "pw1", []Mechanism{SHA256, SHA512}, 4096); err != nil {
		t.Fatal(err)
	}
	if err := SetUser(path, "bob", "pw2", []Mechanism{SHA512}, 8192); err != nil {
		t.Fatal(err)
	}
	if err := SetUser(path, "alice", "pw3", []Mechanism{SHA256}, 4096); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte("pw1")) || bytes.Contains(raw, []byte("pw3")) {
		t.Fatal("a password is in the users file")
	}
	u, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if u.Len() != 2 {
		t.Fatalf("%d users", u.Len())
	}
	a256, _ := u.Lookup("alice", SHA256)
	a512, _ := u.Lookup("alice", SHA512)
	b512, ok := u.Lookup("bob", SHA512)
	if !a256.Verify("pw3") || !a512.Verify("pw1") || !ok || !b512.Verify("pw2") || b512.Iterations != 8192 {
		t.Fatal("credentials do not verify as written")
	}
	if _, ok := u.Lookup("bob", SHA256); ok {
		t.Fatal("bob has no SHA-256 line")
	}
	line := Line("carol", a256)
	for name, in := range map[string]string{
		"fields":     "carol SCRAM-SHA-256 4096",
		"mechanism":  strings.Replace(line, "SCRAM-SHA-256", "SCRAM-MD5", 1),
		"iterations": strings.Replace(line, " 4096 ", " 100 ", 1),
		"key size":   line + "AAAA",
		"duplicate":  line + "\n" + line,
		"base64":     strings.Replace(line, "=", "!", 1),
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: parsed %q", name, in)
		}
	}
	if err := SetUser(path, "has space", "pw", []Mechanism{SHA256}, 4096); err == nil {
		t.Error("a name with a space was accepted")
	}
}
