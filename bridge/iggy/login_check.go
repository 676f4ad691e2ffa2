package iggy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// CheckLogin reports whether the Iggy server that o points at accepts user
// and password: it dials a fresh connection (o's address and TLS settings,
// not its credentials), logs in, and closes it. ok=false means the server
// refused the login (wrong or unknown user, wrong password, inactive user:
// the caller must not tell these apart); err means the check could not be
// made (server unreachable, ctx's deadline). Any goroutine; it holds no
// pooled connection, so a slow login never delays data traffic.
func CheckLogin(ctx context.Context, o Options, user, password string) (ok bool, err error) {
	return checkLogin(ctx, o, user, password, nil)
}

// checkLogin is CheckLogin, reading the user's record into self when it is
// not nil.
func checkLogin(ctx context.Context, o Options, user, password string, self *User) (ok bool, err error) {
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
	if self != nil {
		*self, err = readSelf(ctx, c)
	}
	_ = c.close()
	return err == nil, err
}

// CheckLoginUser is CheckLogin that, on an accepted login, also reads the
// user's own record (GetUser by its id, on the same connection: Iggy lets
// a user read itself without read_users), so the caller learns the
// user's permissions at the cost of one more round trip. Any goroutine.
func CheckLoginUser(ctx context.Context, o Options, user, password string) (u User, ok bool, err error) {
	ok, err = checkLogin(ctx, o, user, password, &u)
	return u, ok, err
}

// readSelf sends GetUser for the connection's own user id.
func readSelf(ctx context.Context, c *conn) (User, error) {
	frame := appendIdentifier(c.begin(), ID(c.login.UserID))
	rep, err := c.roundTrip(ctx, wire.OpNonReplicated, wire.CodeGetUser, frame, nil)
	if err != nil {
		return User{}, err
	}
	p, err := rep.payload()
	if err != nil {
		return User{}, err
	}
	u, ok, err := decodeUser(p)
	if err == nil && !ok {
		err = fmt.Errorf("%w: GetUser of the logged-in user %d found nothing", ErrProtocol, c.login.UserID)
	}
	return u, err
}
