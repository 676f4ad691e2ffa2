package iggy

import (
	"context"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// CheckLogin against the real server: the root user logs in; a wrong
// password and an unknown user are both a plain refusal (ok=false, no
// error), so the caller cannot tell them apart either; a closed port is an
// error within the deadline.
func TestCheckLogin(t *testing.T) {
	// Serial: it measures how long a dial to the fixed closed port 127.0.0.1:1 takes.
	addr := iggyreal.Shared(t)
	o := Options{Addr: addr}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		name, user, pw string
		want           bool
	}{
		{"root", iggyreal.Username, iggyreal.Password, true},
		{"wrong password", iggyreal.Username, "not-the-password", false},
		{"unknown user", "no-such-user-kafka", "whatever", false},
	} {
		start := time.Now()
		ok, err := CheckLogin(ctx, o, c.user, c.pw)
		if err != nil || ok != c.want {
			t.Errorf("%s: ok=%v err=%v, want ok=%v", c.name, ok, err, c.want)
		}
		t.Logf("%s: %v", c.name, time.Since(start))
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	start := time.Now()
	if _, err := CheckLogin(dctx, Options{Addr: "127.0.0.1:1"}, "a", "b"); err == nil {
		t.Fatal("a closed port was not an error")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a closed port took %v", d)
	}
}
