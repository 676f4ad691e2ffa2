package gateway

import "testing"

func TestAdminAddr(t *testing.T) {
	cases := []struct {
		in, bind           string
		defaulted, exposed bool
	}{
		{":9100", "127.0.0.1:9100", true, false},
		{"127.0.0.1:9100", "127.0.0.1:9100", false, false},
		{"[::1]:9100", "[::1]:9100", false, false},
		{"localhost:9100", "localhost:9100", false, false},
		{"0.0.0.0:9100", "0.0.0.0:9100", false, true},
		{"[::]:9100", "[::]:9100", false, true},
		{"10.1.2.3:9100", "10.1.2.3:9100", false, true},
		{"metrics.example:9100", "metrics.example:9100", false, true},
	}
	for _, c := range cases {
		bind, d, e := adminAddr(c.in)
		if bind != c.bind || d != c.defaulted || e != c.exposed {
			t.Errorf("adminAddr(%q) = %q %v %v, want %q %v %v", c.in, bind, d, e, c.bind, c.defaulted, c.exposed)
		}
	}
}
