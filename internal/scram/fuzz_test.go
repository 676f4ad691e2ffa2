package scram

import (
	"testing"
)

// FuzzMessages feeds arbitrary bytes to both message parsers and to a
// server exchange: no panic, and what parses re-parses the same (the
// parsers keep no state). Corpus: testdata/fuzz/FuzzMessages.
func FuzzMessages(f *testing.F) {
	for _, s := range []string{
		"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
		"n,a=user,n=user,r=abc,tokenauth=true",
		"y,,n=u=2Cv=3Dw,r=abc",
		"p=tls-unique,,n=u,r=a",
		"c=biws,r=abc,p=AAEC",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"n,,n=,r=",
		"=",
	} {
		f.Add([]byte(s))
	}
	cred := Fake(SHA256, []byte("fuzz"), "user")
	f.Fuzz(func(t *testing.T, msg []byte) {
		if cf, err := ParseClientFirst(msg); err == nil {
			again, err := ParseClientFirst(msg)
			if err != nil || again != cf {
				t.Fatalf("re-parse differs: %+v / %+v %v", cf, again, err)
			}
			if cf.User == "" || cf.Nonce == "" || !validNonce(cf.Nonce) {
				t.Fatalf("accepted %q with user %q nonce %q", msg, cf.User, cf.Nonce)
			}
			s := NewServer(SHA256)
			if _, err := s.First(cf, cred, []byte("n")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Final(msg); err == nil {
				t.Fatalf("a fake credential verified %q", msg)
			}
		}
		if cf, err := ParseClientFinal(msg); err == nil && len(cf.Proof) == 0 {
			t.Fatalf("accepted %q without a proof", msg)
		}
		s := NewServer(SHA512)
		if first, err := ParseClientFirst([]byte("n,,n=user,r=abc")); err == nil {
			_, _ = s.First(first, Fake(SHA512, nil, "user"), []byte("n"))
			if _, err := s.Final(msg); err == nil {
				t.Fatalf("a fake credential verified %q", msg)
			}
		}
	})
}
