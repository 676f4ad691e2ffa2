package iggy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Options configures a Client and the Store over it.
type Options struct {
	// Addr is host:port of the Iggy server's TCP listener. Default
	// 127.0.0.1:8090.
	Addr string
	// Username and Password log every connection in (LoginRegister, code
	// 40). Both default to "iggy", the server's credentials when it runs
	// with --with-default-root-credentials.
	Username string
	Password string
	// Token is a personal access token; when set it is used instead of
	// Username/Password (LoginRegisterWithPat, code 45).
	Token string
	// PoolSize is the number of connections, each with its own session.
	// Default 4.
	PoolSize int
	// CallTimeout bounds every request, replays of transient answers
	// included (the server stays silent in some failure cases). Default 10s.
	CallTimeout time.Duration
	// ReadAheadBytes caps the bytes the Store holds in polls made ahead
	// of Fetch (readahead.go): 0 the default (64 MiB), < 0 off.
	ReadAheadBytes int
	// DialTimeout bounds connect + TLS handshake. Default 5s.
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff between
	// redials of a broken connection. Defaults 100ms and 5s.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// KeepaliveInterval: idle connections are pinged this often. The real
	// server (0.9.0-edge.5) closes a connection that sent nothing for about
	// 10 s, and pinging also finds one it dropped before a request needs
	// it. Default 3s; keep it well under 10 s.
	KeepaliveInterval time.Duration

	// TLS turns on TLS (the server's [tcp.tls]).
	TLS bool
	// TLSCAFile is a PEM file of CAs to trust instead of the system pool.
	TLSCAFile string
	// TLSServerName is the name to verify; default the host of Addr.
	TLSServerName string
	// TLSInsecureSkipVerify skips certificate checks (self-signed test
	// servers only).
	TLSInsecureSkipVerify bool
	// TLSConfig, when set, is used as is and the TLS* fields above are
	// ignored (TLS is implied).
	TLSConfig *tls.Config

	// Durability is the storage setting of every topic the Store creates
	// (nil: DurabilityFor("always"), the gateway's default promise that an
	// acknowledged record survives a kill -9 of the server).
	Durability *Durability

	// StateStream is the stream where the gateway keeps what Iggy has no
	// place for (producer-id marks, the consumer-group registry). Default
	// DefaultStateStream. Gateways sharing one Iggy share it.
	StateStream string

	// Logger receives connection-state changes. Default slog.Default().
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:8090"
	DefaultPoolSize     = 4
	DefaultCallTimeout  = 10 * time.Second
	DefaultDialTimeout  = 5 * time.Second
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 5 * time.Second
	DefaultKeepalive    = 3 * time.Second
	DefaultStateStream  = "iggy-kafka-gateway"
)

func (o *Options) withDefaults() Options {
	d := *o
	if d.Addr == "" {
		d.Addr = DefaultAddr
	}
	if d.Token == "" && d.Username == "" && d.Password == "" {
		d.Username, d.Password = "iggy", "iggy"
	}
	if d.PoolSize <= 0 {
		d.PoolSize = DefaultPoolSize
	}
	if d.CallTimeout <= 0 {
		d.CallTimeout = DefaultCallTimeout
	}
	if d.DialTimeout <= 0 {
		d.DialTimeout = DefaultDialTimeout
	}
	if d.ReconnectMin <= 0 {
		d.ReconnectMin = DefaultReconnectMin
	}
	if d.ReconnectMax < d.ReconnectMin {
		d.ReconnectMax = max(DefaultReconnectMax, d.ReconnectMin)
	}
	if d.KeepaliveInterval <= 0 {
		d.KeepaliveInterval = DefaultKeepalive
	}
	if d.Durability == nil {
		always, _ := DurabilityFor("always")
		d.Durability = &always
	}
	if d.StateStream == "" {
		d.StateStream = DefaultStateStream
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return d
}

// tlsConfig builds the client TLS configuration, or nil for plain TCP.
func (o *Options) tlsConfig() (*tls.Config, error) {
	if o.TLSConfig != nil {
		return o.TLSConfig.Clone(), nil
	}
	if !o.TLS {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName, InsecureSkipVerify: o.TLSInsecureSkipVerify}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("iggy: tls server name from %q: %w", o.Addr, err)
		}
		cfg.ServerName = host
	}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("iggy: tls ca file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("iggy: tls ca file %s: no PEM certificates", o.TLSCAFile)
		}
	}
	return cfg, nil
}

func (o *Options) validate() error {
	for _, s := range []string{o.Username, o.Password, o.Token} {
		if len(s) > 255 {
			return errors.New("iggy: username, password and token must be at most 255 bytes")
		}
	}
	if !validName(o.StateStream) {
		return fmt.Errorf("iggy: state stream name %q must be 1..255 bytes", o.StateStream)
	}
	return nil
}

// Client speaks Iggy's binary protocol over a pool of connections. All
// methods are safe for concurrent use.
type Client struct {
	pool *pool
	opts Options
}

// Dial connects every pooled connection and logs it in. It fails, with the
// reason, when any connection cannot be made: a gateway pointed at a wrong
// address or with wrong credentials should not start. Later failures are
// retried in the background (see Options.ReconnectMin).
func Dial(ctx context.Context, opts Options) (*Client, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	tcfg, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	cfg := &connConfig{addr: o.Addr, tls: tcfg, dialTimeout: o.DialTimeout, callTimeout: o.CallTimeout,
		username: o.Username, password: o.Password, token: o.Token}
	p, err := newPool(ctx, cfg, o.PoolSize, o.Logger, o.ReconnectMin, o.ReconnectMax, o.KeepaliveInterval)
	if err != nil {
		return nil, dialError(&o, err)
	}
	return &Client{pool: p, opts: o}, nil
}

// dialError says what failed at Dial, naming the address and the user.
func dialError(o *Options, err error) error {
	who := "user " + o.Username
	if o.Token != "" {
		who = "a personal access token"
	}
	var ce *ConnError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	return fmt.Errorf("iggy: cannot connect to %s as %s: %w", o.Addr, who, err)
}

// Close logs out and closes every connection. Calls after Close return
// bridge.ErrClosed.
func (c *Client) Close() error {
	c.pool.close()
	return nil
}

// ServerVersion is the version string the server sent at login.
func (c *Client) ServerVersion() string {
	for _, s := range c.pool.slots {
		s.sem <- struct{}{}
		v := ""
		if s.c != nil {
			v = s.c.login.ServerVersion
		}
		<-s.sem
		if v != "" {
			return v
		}
	}
	return ""
}

// call runs one request on slot s: body appends the request body to the
// frame, tail is sent after it without a copy, fn reads the payload while
// the connection is still held (so it may alias the read buffer).
//
// A connection idle for a while is probed before use, and replaced at once
// when the server has closed it (it restarted, or dropped idle clients), so
// the first request after a server restart does not fail. A request that
// breaks its connection mid-way is sent once more on a fresh one when that
// cannot store anything twice (retrySafe); a send never is, since its
// outcome is unknown.
func (c *Client) call(ctx context.Context, s *slot, what string, op uint8, code uint32,
	body func([]byte) []byte, tail []byte, fn func([]byte) error) error {
	return c.callKeep(ctx, s, what, op, code, body, tail, fn, nil)
}

// callKeep is call; with keep not nil, the reply frame fn was handed
// becomes the caller's, in *keep, once fn succeeded, and the connection
// reads its next reply into the buffer *keep held (a trade of buffers,
// so a reply the caller keeps is never copied).
func (c *Client) callKeep(ctx context.Context, s *slot, what string, op uint8, code uint32,
	body func([]byte) []byte, tail []byte, fn func([]byte) error, keep *[]byte) error {
	if s == nil {
		return fmt.Errorf("iggy %s: %w", what, c.pool.downErr(nil))
	}
	cn, err := s.acquire(ctx)
	if err != nil {
		return fmt.Errorf("iggy %s: %w", what, err)
	}
	if cn.idle() >= idleProbeAfter && cn.peerClosed() {
		if cn, err = s.replace(ctx, cn, errPeerClosed); err != nil {
			s.release(nil, nil)
			return fmt.Errorf("iggy %s: %w", what, err)
		}
	}
	err = c.attempt(ctx, cn, op, code, body, tail, fn, keep)
	if brokenConn(err) && ctx.Err() == nil {
		// Redial now, so the slot is up for the next caller, and repeat
		// the request on the new connection if that is safe.
		fresh, rerr := s.replace(ctx, cn, err)
		if rerr != nil || !retrySafe(op) {
			s.release(nil, nil)
			return fmt.Errorf("iggy %s: %w", what, err)
		}
		cn = fresh
		err = c.attempt(ctx, cn, op, code, body, tail, fn, keep)
	}
	s.release(cn, err)
	if err != nil {
		return fmt.Errorf("iggy %s: %w", what, err)
	}
	return nil
}

// attempt sends one request on cn and hands the payload to fn.
func (c *Client) attempt(ctx context.Context, cn *conn, op uint8, code uint32,
	body func([]byte) []byte, tail []byte, fn func([]byte) error, keep *[]byte) error {
	frame := cn.begin()
	if body != nil {
		frame = body(frame)
	}
	if len(frame)+len(tail) > wire.MaxFrame {
		cn.wbuf = frame[:0]
		return fmt.Errorf("request of %d bytes over the %d-byte frame limit: %w", len(frame)+len(tail), wire.MaxFrame, bridge.ErrInvalidBatch)
	}
	rep, err := cn.roundTrip(ctx, op, code, frame, tail)
	if err == nil {
		var p []byte
		if p, err = rep.payload(); err == nil && fn != nil {
			err = fn(p)
		}
		if err == nil && keep != nil {
			*keep, cn.rbuf = cn.rbuf, (*keep)[:0]
		}
		if sessionLost(err) {
			err = &ConnError{Addr: c.opts.Addr, Op: "session lost", Err: err}
		}
	}
	return err
}

// retrySafe reports the operations that may be sent again after their
// connection broke with the outcome unknown: reads change nothing, and
// storing or deleting a consumer offset twice leaves what once does.
// Metadata changes are retried by their callers, which know how to read
// "already exists" / "not found" on the second try; sends are never
// retried here (the Kafka client retries, and the gateway's idempotence
// layer recognises a batch that did land).
func retrySafe(op uint8) bool {
	return op == wire.OpNonReplicated || op == wire.OpStoreConsumerOffset || op == wire.OpDeleteConsumerOffset
}

// brokenConn reports a connection that failed, not a server that is slow:
// a timed-out request is not repeated (it would double the wait on a
// server that is alive but stalled).
func brokenConn(err error) bool {
	var ce *ConnError
	if err == nil || !errors.As(err, &ce) {
		return false
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, context.DeadlineExceeded)
}

// sessionLost reports answers after which the connection's session is
// gone although the socket is fine: the slot must log in again.
func sessionLost(err error) bool {
	if err == nil {
		return false // before errors.As, whose target would escape on every call
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code == wire.StatusUnauthenticated || e.Code == wire.StatusStaleClient
	}
	return errors.Is(err, errUnexpectedEmptySendBody)
}

// nr is a NonReplicated read on any live connection.
func (c *Client) nr(ctx context.Context, what string, code uint32, body func([]byte) []byte, fn func([]byte) error) error {
	return c.call(ctx, c.pool.any(), what, wire.OpNonReplicated, code, body, nil, fn)
}

// Ping checks one connection end to end.
func (c *Client) Ping(ctx context.Context) error {
	return c.nr(ctx, "ping", wire.CodePing, nil, nil)
}

// GetStream returns a stream and its topic headers; ok=false when absent.
func (c *Client) GetStream(ctx context.Context, stream Identifier) (s Stream, ok bool, err error) {
	if !stream.valid() {
		return Stream{}, false, ErrNameLength
	}
	err = c.nr(ctx, "get stream", wire.CodeGetStream,
		func(b []byte) []byte { return appendIdentifier(b, stream) },
		func(p []byte) error {
			if len(p) == 0 {
				return nil
			}
			s, err = decodeStream(p)
			ok = err == nil
			return err
		})
	return s, ok, err
}

// CreateStream creates a stream; ErrStreamExists when the name is taken.
func (c *Client) CreateStream(ctx context.Context, name string) (s Stream, err error) {
	if !validName(name) {
		return Stream{}, ErrNameLength
	}
	err = c.call(ctx, c.pool.any(), "create stream", wire.OpCreateStream, 0,
		func(b []byte) []byte { return appendCreateStream(b, name) }, nil,
		func(p []byte) error { s, err = decodeStream(p); return err })
	return s, err
}

// DeleteStream deletes a stream with all its topics.
func (c *Client) DeleteStream(ctx context.Context, stream Identifier) error {
	if !stream.valid() {
		return ErrNameLength
	}
	return c.call(ctx, c.pool.any(), "delete stream", wire.OpDeleteStream, 0,
		func(b []byte) []byte { return appendIdentifier(b, stream) }, nil, nil)
}

// GetTopic returns a topic with its partitions; ok=false when the stream
// or the topic is absent.
func (c *Client) GetTopic(ctx context.Context, stream, topic Identifier) (t Topic, ok bool, err error) {
	if !stream.valid() || !topic.valid() {
		return Topic{}, false, ErrNameLength
	}
	err = c.nr(ctx, "get topic", wire.CodeGetTopic,
		func(b []byte) []byte { return appendTopicRef(b, stream, topic) },
		func(p []byte) error {
			if len(p) == 0 {
				return nil
			}
			t, err = decodeTopic(p)
			t.detach()
			ok = err == nil
			return err
		})
	return t, ok, err
}

// detach copies the option blocks out of the read buffer.
func (t *Topic) detach() {
	t.Options = cloneOrNil(t.Options)
	t.DerivedOptions = cloneOrNil(t.DerivedOptions)
}

func cloneOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// GetTopics lists a stream's topic headers (none for a missing stream).
func (c *Client) GetTopics(ctx context.Context, stream Identifier) (ts []Topic, err error) {
	if !stream.valid() {
		return nil, ErrNameLength
	}
	err = c.nr(ctx, "get topics", wire.CodeGetTopics,
		func(b []byte) []byte { return appendIdentifier(b, stream) },
		func(p []byte) error {
			ts, err = decodeTopics(p)
			for i := range ts {
				ts[i].detach()
			}
			return err
		})
	return ts, err
}

// CreateTopic creates a topic with partitions 0..n-1, with durability d
// as its storage options (nil: the server's defaults, see DurabilityFor).
// ErrStreamNotFound when the stream is missing, ErrTopicExists when the
// name is taken.
func (c *Client) CreateTopic(ctx context.Context, stream Identifier, name string, partitions uint32, d *Durability) (t Topic, err error) {
	if !stream.valid() || !validName(name) {
		return Topic{}, ErrNameLength
	}
	err = c.call(ctx, c.pool.any(), "create topic", wire.OpCreateTopic, 0,
		func(b []byte) []byte {
			b = appendCreateTopic(b, stream, partitions, name)
			if d != nil {
				b = appendDurability(b, *d)
			}
			return b
		}, nil,
		func(p []byte) error { t, err = decodeTopic(p); t.detach(); return err })
	return t, err
}

// CreateTopicWithOptions creates a topic with partitions 0..n-1 and the
// options block opts (any keys of the server's topic catalog; see
// TopicOption). The server refuses an unknown key with 4041 and a bad
// value with 4042, before anything is stored.
func (c *Client) CreateTopicWithOptions(ctx context.Context, stream Identifier, name string, partitions uint32, opts []TopicOption) (t Topic, err error) {
	if !stream.valid() || !validName(name) {
		return Topic{}, ErrNameLength
	}
	block, err := AppendTopicOptions(nil, opts)
	if err != nil {
		return Topic{}, err
	}
	err = c.call(ctx, c.pool.any(), "create topic", wire.OpCreateTopic, 0,
		func(b []byte) []byte { return append(appendCreateTopic(b, stream, partitions, name), block...) }, nil,
		func(p []byte) error { t, err = decodeTopic(p); t.detach(); return err })
	return t, err
}

// UpdateTopic renames a topic (name may be its current one) and patches
// its options: keys not in opts keep their values. The server accepts only
// compression_algorithm, message_expiry and max_topic_size here (4041 for
// any other key): storage settings are fixed at creation.
func (c *Client) UpdateTopic(ctx context.Context, stream, topic Identifier, name string, opts []TopicOption) error {
	if !stream.valid() || !topic.valid() || !validName(name) {
		return ErrNameLength
	}
	block, err := AppendTopicOptions(nil, opts)
	if err != nil {
		return err
	}
	return c.call(ctx, c.pool.any(), "update topic", wire.OpUpdateTopic, 0,
		func(b []byte) []byte { return append(appendName(appendTopicRef(b, stream, topic), name), block...) }, nil, nil)
}

// DeleteTopic deletes a topic and its messages.
func (c *Client) DeleteTopic(ctx context.Context, stream, topic Identifier) error {
	if !stream.valid() || !topic.valid() {
		return ErrNameLength
	}
	return c.call(ctx, c.pool.any(), "delete topic", wire.OpDeleteTopic, 0,
		func(b []byte) []byte { return appendTopicRef(b, stream, topic) }, nil, nil)
}

// CreatePartitions adds count (1..1000) partitions at the end of a topic.
func (c *Client) CreatePartitions(ctx context.Context, stream, topic Identifier, count uint32) error {
	return c.partitions(ctx, "create partitions", wire.OpCreatePartitions, stream, topic, count)
}

// DeletePartitions removes count partitions from the end of a topic.
func (c *Client) DeletePartitions(ctx context.Context, stream, topic Identifier, count uint32) error {
	return c.partitions(ctx, "delete partitions", wire.OpDeletePartitions, stream, topic, count)
}

func (c *Client) partitions(ctx context.Context, what string, op uint8, stream, topic Identifier, count uint32) error {
	if !stream.valid() || !topic.valid() {
		return ErrNameLength
	}
	return c.call(ctx, c.pool.any(), what, op, 0,
		func(b []byte) []byte { return appendPartitions(b, stream, topic, count) }, nil, nil)
}

// SendMessages sends one complete Iggy send batch (256-byte batch header
// and message frames, checksums computed, see bridge.IggyBatchBuilder) to
// one partition, on the connection that partition is pinned to. The batch
// bytes go on the wire as they are, after the metadata prefix. The first
// confirmation is returned; ok=false when the server confirmed none (the
// batch was committed but its offsets are unknown).
//
// A *ConnError (matching bridge.ErrUnavailable) means the outcome is
// unknown: the batch may have been stored. Sends are at-least-once.
func (c *Client) SendMessages(ctx context.Context, stream, topic Identifier, partition uint32, batch []byte) (conf SendConfirmation, ok bool, err error) {
	v, err := bridge.ParseIggyBatch(batch)
	if err != nil {
		return conf, false, err
	}
	if !stream.valid() || !topic.valid() {
		return conf, false, ErrNameLength
	}
	s := c.pool.pinned(stream, topic, partition)
	err = c.call(ctx, s, "send messages", wire.OpSendMessages, 0,
		func(b []byte) []byte {
			return appendSendPrefix(b, stream, topic, PartitionID(partition), v.Count)
		}, batch[:v.Length],
		func(p []byte) error {
			conf, ok, err = decodeFirstConfirmation(p)
			return err
		})
	return conf, ok, err
}

// decodeFirstConfirmation reads a send reply without allocating.
func decodeFirstConfirmation(p []byte) (SendConfirmation, bool, error) {
	if len(p) == 0 {
		return SendConfirmation{}, false, errUnexpectedEmptySendBody
	}
	rd := wire.NewReader(p)
	n := rd.U32()
	if rd.Failed() || uint64(n)*confirmationSize != uint64(rd.Len()) {
		return SendConfirmation{}, false, short("send confirmations")
	}
	if n == 0 {
		return SendConfirmation{}, false, nil
	}
	return SendConfirmation{StreamID: rd.U32(), TopicID: rd.U32(), PartitionID: rd.U32(), BaseOffset: rd.U64()}, true, nil
}

// PollMessages polls and calls fn with each stored batch record of the
// reply (valid only during fn) until fn returns false.
func (c *Client) PollMessages(ctx context.Context, req *PollRequest, fn func(record []byte) bool) (PollHead, error) {
	return c.pollKeep(ctx, req, fn, nil)
}

// pollKeep is PollMessages; with frame not nil the reply frame, which
// fn's records alias, is left in *frame for the caller to keep, and the
// buffer *frame held becomes the connection's (callKeep).
func (c *Client) pollKeep(ctx context.Context, req *PollRequest, fn func(record []byte) bool, frame *[]byte) (h PollHead, err error) {
	if !req.Stream.valid() || !req.Topic.valid() || !req.Consumer.ID.valid() {
		return PollHead{}, ErrNameLength
	}
	err = c.callKeep(ctx, c.pool.any(), "poll messages", wire.OpNonReplicated, wire.CodePollMessages,
		func(b []byte) []byte { return appendPoll(b, req) },
		nil, func(p []byte) error { h, err = decodePoll(p, fn); return err }, frame)
	return h, err
}

// GetConsumerOffset reads a stored consumer offset; ok=false when none is
// stored.
func (c *Client) GetConsumerOffset(ctx context.Context, ref *OffsetRef) (o ConsumerOffset, ok bool, err error) {
	if !ref.Stream.valid() || !ref.Topic.valid() || !ref.Consumer.ID.valid() {
		return o, false, ErrNameLength
	}
	err = c.nr(ctx, "get consumer offset", wire.CodeGetConsumerOffset,
		func(b []byte) []byte { return appendOffsetRef(b, ref) },
		func(p []byte) error { o, ok, err = decodeConsumerOffset(p); return err })
	return o, ok, err
}

// StoreConsumerOffset stores offset (the last consumed message; at most the
// partition's current offset, else ErrInvalidOffset). ref.Partition is
// required by the server.
func (c *Client) StoreConsumerOffset(ctx context.Context, ref *OffsetRef, offset uint64) error {
	return c.offsetOp(ctx, "store consumer offset", wire.OpStoreConsumerOffset, ref,
		func(b []byte) []byte { return appendStoreOffset(b, ref, offset) })
}

// DeleteConsumerOffset deletes a stored offset (ErrConsumerOffsetNotFound
// when none is stored).
func (c *Client) DeleteConsumerOffset(ctx context.Context, ref *OffsetRef) error {
	return c.offsetOp(ctx, "delete consumer offset", wire.OpDeleteConsumerOffset, ref,
		func(b []byte) []byte { return appendDeleteOffset(b, ref) })
}

// offsetOp runs an offset write on the partition's pinned connection so
// commits of one partition keep their order.
func (c *Client) offsetOp(ctx context.Context, what string, op uint8, ref *OffsetRef, body func([]byte) []byte) error {
	if !ref.Stream.valid() || !ref.Topic.valid() || !ref.Consumer.ID.valid() {
		return ErrNameLength
	}
	if ref.Partition == nil {
		return fmt.Errorf("iggy %s: a partition is required", what)
	}
	return c.call(ctx, c.pool.pinned(ref.Stream, ref.Topic, *ref.Partition), what, op, 0, body, nil, nil)
}

var _ io.Closer = (*Client)(nil)
