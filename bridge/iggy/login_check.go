package iggy

import (
	"context"
	"errors"
	"time"
)

// CheckLogin reports whether the Iggy server that o points at accepts user
// and password: it dials a fresh connection (o's address and TLS settings,
// not its credentials), logs in, and closes it. ok=false means the server
// refused the login (wrong or unknown user, wrong password, inactive user:
// the caller must not tell these apart); err means the check could not be
// made (server unreachable, ctx's deadline). Any goroutine; it holds no
// pooled connection, so a slow login never delays data traffic.
func CheckLogin(ctx context.Context, o Options, user, password string) (ok bool, err error) {
	d := o.withDefaults()
	tcfg, err := d.tlsConfig()
	if err != nil {
		return false, err
	}
	cfg := &connConfig{addr: d.Addr, tls: tcfg, dialTimeout: d.DialTimeout, callTimeout: d.CallTimeout,
		username: user, password: password}
	if dl, has := ctx.Deadline(); has {
		// The login's round trip honours ctx; the dial its own timeout,
		// cut to ctx's.
		if left := time.Until(dl); left < cfg.dialTimeout {
			cfg.dialTimeout = left
		}
	}
	c, err := dialConn(ctx, cfg)
	if err != nil {
		if errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrUnauthorized) {
			return false, nil
		}
		return false, err
	}
	_ = c.close()
	return true, nil
}
