package handlers

// Authorization: Kafka ACLs (docs/SECURITY.md, "ACLs"), the principal of
// a call, and the SCRAM credentials managed through Kafka (keys 50/51),
// all kept in the store's security log (bridge.SecurityLog) and served
// from an immutable in-memory snapshot, so a check on any goroutine (the
// event loop included) is a scan of memory and never waits for the store.
//
// The semantics are those of Kafka's StandardAuthorizer with
// allow.everyone.if.no.acl.found=false: a super user may do anything;
// otherwise a matching DENY (same operation or ALL) refuses, else a
// matching ALLOW of the operation, of ALL, or of one that implies it
// (DESCRIBE by READ/WRITE/DELETE/ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS)
// permits, else the answer is no. A binding matches a resource by type and
// by pattern (LITERAL: the same name or "*"; PREFIXED: a prefix of the
// name), a principal when equal or "User:*", a host when equal or "*".

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// PrincipalAnonymous is the principal of a connection that did not log in
// (a PLAINTEXT listener), as Kafka names it.
const PrincipalAnonymous = "User:ANONYMOUS"

// ClusterResource is the name of the one CLUSTER resource.
const ClusterResource = "kafka-cluster"

// AuthzConfig turns authorization on. Zero: off, every principal may do
// everything and the ACL keys answer SECURITY_DISABLED, as a Kafka broker
// without an authorizer does.
type AuthzConfig struct {
	Enabled bool
	// SuperUsers may do everything whatever the ACLs say ("User:admin").
	SuperUsers []string
	// RefreshEvery bounds how stale the snapshot may get when another
	// gateway changes the shared log (Iggy); default 1s. A change made
	// through this gateway is in the snapshot before it is answered.
	RefreshEvery time.Duration
}

// Principal is the Kafka principal of the call's connection: the SASL
// user once logged in, else the verified client certificate's subject on
// an mTLS listener ("User:CN=app,O=org", as Kafka's default principal
// builder names it), else User:ANONYMOUS. This is the one place a
// principal comes from, so every check sees the same one. The goroutine
// running the call.
func (c *Call) Principal() string {
	if c.Sasl != nil && c.Sasl.Authenticated() {
		if p := c.Sasl.Principal(); p != "" {
			return p
		}
	}
	if c.TLSPrincipal != "" {
		return "User:" + c.TLSPrincipal
	}
	return PrincipalAnonymous
}

// clientIP is the connection's address as ACL hosts name it (no '/').
func (c *Call) clientIP() string { return strings.TrimPrefix(c.ClientHost, "/") }

// Authorized reports whether the call's principal may do op on the
// resource (rt, name): the ACLs (always true with authorization off) and,
// for a client logged in as an Iggy user, Iggy's permissions. Any
// goroutine; blocks only for an Iggy user whose cached permissions are
// stale (one GetUser), which only topic operations ask, never the keys
// answered on the event loop.
func (c *Call) Authorized(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if !c.iggyPermits(op, rt, name) {
		return false
	}
	s := c.G.Sec
	if s == nil || !s.cfg.Enabled {
		return true
	}
	return s.Authorized(c.Principal(), c.clientIP(), op, rt, name)
}

// iggyPermits is the Iggy half of Authorized alone: true unless the
// client is logged in as an Iggy user that Iggy does not let do op. For a
// key whose ACL check covers a topic by a cluster operation (Kafka's
// brokers' CLUSTER_ACTION), which still holds an Iggy user to Iggy's
// permissions on the topic. Blocks as Authorized does.
func (c *Call) iggyPermits(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return c.Sasl == nil || !c.Sasl.iggyUser.Load() || c.iggyAllows(op, rt, name)
}

// iggyAllows is the Iggy half of Authorized for a client logged in (PLAIN)
// as an Iggy user: Iggy's permissions of that user for what op does to a
// topic (docs/SECURITY.md, "ACLs and Iggy permissions"). Operations on
// groups, transactional ids and the cluster other than CREATE have no
// Iggy counterpart and pass. The keys that run on the event loop
// (FindCoordinator, InitProducerId, DescribeTransactions) ask only those,
// so the Iggy wait on a cache miss happens on workers only.
func (c *Call) iggyAllows(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	var act bridge.Act
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		switch op {
		case kmsg.ACLOperationRead:
			act = bridge.ActPoll
		case kmsg.ACLOperationWrite:
			act = bridge.ActSend
		case kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs:
			act = bridge.ActDescribe
		case kmsg.ACLOperationCreate:
			act = bridge.ActCreate
		default: // DELETE, ALTER, ALTER_CONFIGS, ALL
			act = bridge.ActManage
		}
	case kmsg.ACLResourceTypeCluster:
		if op != kmsg.ACLOperationCreate {
			return true
		}
		act, name = bridge.ActCreate, ""
	default:
		return true
	}
	sc := c.G.Cfg.Sasl
	user := strings.TrimPrefix(c.Sasl.Principal(), "User:")
	return sc.Permissions.Allow(c.Ctx, user, act, c.G.Cfg.Stream, name)
}

// mayCreateTopic: CREATE on the cluster or on the topic, as Kafka asks
// for CreateTopics and auto-creation.
func (c *Call) mayCreateTopic(name string) bool {
	return c.Authorized(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, ClusterResource) ||
		c.Authorized(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name)
}

// authorizedTopic is readTopic behind an ACL check of op on the topic:
// TOPIC_AUTHORIZATION_FAILED before anything about the topic is told.
func (c *Call) authorizedTopic(name string, aop kmsg.ACLOperation, o op) (bridge.TopicInfo, int16) {
	if !c.Authorized(aop, kmsg.ACLResourceTypeTopic, name) {
		return bridge.TopicInfo{}, kerr.TopicAuthorizationFailed.Code
	}
	return c.readTopic(name, o)
}

// mayWriteSomeTopic is Kafka's authorizeByResourceType(TOPIC, WRITE), what
// an idempotent producer without IDEMPOTENT_WRITE on the cluster needs:
// some ALLOW of WRITE (or ALL) on topics for the principal that no DENY
// covers whole. Any goroutine; never blocks.
func (c *Call) mayWriteSomeTopic() bool {
	s := c.G.Sec
	if s == nil || !s.cfg.Enabled || s.super[c.Principal()] {
		return true
	}
	return s.state.Load().mayWriteSomeTopic(c.Principal(), c.clientIP())
}

func (st *secState) mayWriteSomeTopic(principal, host string) bool {
	applies := func(b *bridge.ACLBinding) bool {
		return b.ResourceType == int8(kmsg.ACLResourceTypeTopic) &&
			(b.Operation == int8(kmsg.ACLOperationWrite) || b.Operation == int8(kmsg.ACLOperationAll)) &&
			(b.Principal == principal || b.Principal == "User:*") && (b.Host == host || b.Host == "*")
	}
	for i := range st.acls {
		a := &st.acls[i]
		if a.Permission != int8(kmsg.ACLPermissionTypeAllow) || !applies(a) {
			continue
		}
		covered := false
		for j := range st.acls {
			d := &st.acls[j]
			if d.Permission != int8(kmsg.ACLPermissionTypeDeny) || !applies(d) {
				continue
			}
			switch d.PatternType {
			case int8(kmsg.ACLResourcePatternTypeLiteral):
				covered = d.ResourceName == "*" ||
					(a.PatternType == d.PatternType && a.ResourceName == d.ResourceName)
			case int8(kmsg.ACLResourcePatternTypePrefixed):
				covered = strings.HasPrefix(a.ResourceName, d.ResourceName)
			}
			if covered {
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}

// authzOn reports whether authorization is enabled.
func (c *Call) authzOn() bool { return c.G.Sec != nil && c.G.Sec.cfg.Enabled }

// Operations a resource type supports, for KIP-430 authorized operations.
var (
	topicOps = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	groupOps   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}
	clusterOps = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
)

// authorizedOps is the KIP-430 bit field (bit n: operation n) of the ops
// the principal may do on the resource; with authorization off every
// supported op, as a Kafka broker without an authorizer answers.
func (c *Call) authorizedOps(rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		if c.Authorized(op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// Security is the gateway's authorization state. Built by NewGateway;
// safe for concurrent use.
type Security struct {
	cfg   AuthzConfig
	super map[string]bool
	log   *slog.Logger
	store bridge.SecurityLog // nil: the store keeps no security log
	file  CredentialStore    // the users file; nil when none

	state atomic.Pointer[secState]

	mu         sync.Mutex // serializes reads of the log and pos
	pos        uint64
	last       atomic.Int64 // unix nanos of the last successful read
	refreshing atomic.Bool

	// Delegation tokens (tokens.go): the settings, the purge's pacing, and
	// tokMu serializing this gateway's token changes.
	tok       TokenConfig
	lastSweep atomic.Int64
	sweeping  atomic.Bool
	tokMu     sync.Mutex
}

type credKey struct {
	name string
	mech scram.Mechanism
}

// secState is one immutable snapshot of the log's meaning.
type secState struct {
	acls []bridge.ACLBinding
	// An index of acls, so a check reads only the bindings that can
	// apply: LITERAL ones by (type, name), and per type the LITERAL "*"
	// and PREFIXED ones. Built by index; nil (no index) means scan acls.
	lit   map[litKey][]bridge.ACLBinding
	other map[int8][]bridge.ACLBinding
	// creds set through Kafka; dropped hides a users-file credential
	// deleted through Kafka.
	creds   map[credKey]scram.Credential
	dropped map[credKey]bool
	// Live delegation tokens by id and by HMAC (tokens.go).
	tokens       map[string]*token
	tokensByHMAC map[string]*token
	// quotas are the client quotas set through Kafka (quotas.go);
	// quotaKeys the keys some entity sets.
	quotas    quotaMap
	quotaKeys map[string]bool
}

func newSecurity(cfg Config, store bridge.SecurityLog, log *slog.Logger) *Security {
	s := &Security{cfg: cfg.Authz, super: map[string]bool{}, log: log, tok: cfg.Tokens.WithDefaults()}
	if s.cfg.RefreshEvery <= 0 {
		s.cfg.RefreshEvery = time.Second
	}
	for _, u := range cfg.Authz.SuperUsers {
		s.super[u] = true
	}
	s.store = store
	if cfg.Sasl != nil {
		s.file = cfg.Sasl.Users
		if prev, ok := s.file.(*Security); ok {
			s.file = prev.file // a SaslConfig shared by two gateways (tests)
		}
	}
	s.state.Store(&secState{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.refresh(ctx); err != nil {
		// Deny-by-default holds meanwhile; the next check retries.
		log.Error("security log not read: ACLs and SCRAM users from Kafka are missing until it is", "err", err)
	}
	return s
}

// Lookup implements CredentialStore: a credential set through Kafka wins
// over the users file, and one deleted through Kafka hides the file's.
// Any goroutine.
func (s *Security) Lookup(user string, mech scram.Mechanism) (scram.Credential, bool) {
	if s == nil {
		return scram.Credential{}, false
	}
	s.maybeRefresh()
	st := s.state.Load()
	k := credKey{user, mech}
	if c, ok := st.creds[k]; ok {
		return c, true
	}
	if st.dropped[k] || s.file == nil {
		return scram.Credential{}, false
	}
	return s.file.Lookup(user, mech)
}

// Authorized is the decision for principal from host (an IP). Any
// goroutine; never blocks.
func (s *Security) Authorized(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if s.super[principal] {
		return true
	}
	s.maybeRefresh()
	return s.state.Load().authorized(principal, host, int8(op), int8(rt), name)
}

type litKey struct {
	rt   int8
	name string
}

// index fills lit and other from acls.
func (st *secState) index() {
	st.lit = map[litKey][]bridge.ACLBinding{}
	st.other = map[int8][]bridge.ACLBinding{}
	for _, b := range st.acls {
		if b.PatternType == int8(kmsg.ACLResourcePatternTypeLiteral) && b.ResourceName != "*" {
			k := litKey{b.ResourceType, b.ResourceName}
			st.lit[k] = append(st.lit[k], b)
		} else {
			st.other[b.ResourceType] = append(st.other[b.ResourceType], b)
		}
	}
}

func (st *secState) authorized(principal, host string, op, rt int8, name string) bool {
	if st.lit == nil {
		return decide(st.acls, principal, host, op, rt, name)
	}
	a, b := st.lit[litKey{rt, name}], st.other[rt]
	// Deny wins across both lists, so each is asked for a deny first.
	if denied(a, principal, host, op, rt, name) || denied(b, principal, host, op, rt, name) {
		return false
	}
	return decide(a, principal, host, op, rt, name) || decide(b, principal, host, op, rt, name)
}

// denied reports a matching DENY in bs.
func denied(bs []bridge.ACLBinding, principal, host string, op, rt int8, name string) bool {
	for i := range bs {
		b := &bs[i]
		if b.Permission == int8(kmsg.ACLPermissionTypeDeny) && applies(b, principal, host, rt, name) &&
			(b.Operation == op || b.Operation == int8(kmsg.ACLOperationAll)) {
			return true
		}
	}
	return false
}

func applies(b *bridge.ACLBinding, principal, host string, rt int8, name string) bool {
	return b.ResourceType == rt && patternMatches(b, name) &&
		(b.Principal == principal || b.Principal == "User:*") &&
		(b.Host == host || b.Host == "*")
}

// decide is the whole decision over bs alone (deny wins, else an allow).
func decide(bs []bridge.ACLBinding, principal, host string, op, rt int8, name string) bool {
	allowed := false
	for i := range bs {
		b := &bs[i]
		if !applies(b, principal, host, rt, name) {
			continue
		}
		if b.Permission == int8(kmsg.ACLPermissionTypeDeny) {
			if b.Operation == op || b.Operation == int8(kmsg.ACLOperationAll) {
				return false // deny wins
			}
			continue
		}
		if !allowed && implies(b.Operation, op) {
			allowed = true
		}
	}
	return allowed
}

// patternMatches reports whether binding b applies to resource name.
func patternMatches(b *bridge.ACLBinding, name string) bool {
	switch b.PatternType {
	case int8(kmsg.ACLResourcePatternTypeLiteral):
		return b.ResourceName == name || b.ResourceName == "*"
	case int8(kmsg.ACLResourcePatternTypePrefixed):
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// implies reports whether an ALLOW of have permits want.
func implies(have, want int8) bool {
	if have == want || have == int8(kmsg.ACLOperationAll) {
		return true
	}
	switch want {
	case int8(kmsg.ACLOperationDescribe):
		switch have {
		case int8(kmsg.ACLOperationRead), int8(kmsg.ACLOperationWrite),
			int8(kmsg.ACLOperationDelete), int8(kmsg.ACLOperationAlter):
			return true
		}
	case int8(kmsg.ACLOperationDescribeConfigs):
		return have == int8(kmsg.ACLOperationAlterConfigs)
	}
	return false
}

// maybeRefresh starts one background read of the log when the snapshot
// is older than RefreshEvery (other gateways may have appended). Never
// blocks; any goroutine.
func (s *Security) maybeRefresh() {
	s.maybeSweep()
	if s.store == nil || time.Now().UnixNano()-s.last.Load() < int64(s.cfg.RefreshEvery) {
		return
	}
	if !s.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.refreshing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.refresh(ctx); err != nil {
			s.log.Warn("security log not read", "err", err)
			// Try again after another RefreshEvery, not on every check.
			s.last.Store(time.Now().UnixNano())
		}
	}()
}

// refresh reads what was appended since the last read and publishes the
// new snapshot. Any goroutine; waits for the store under ctx.
func (s *Security) refresh(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []bridge.SecurityRecord
	next, err := s.store.ReadSecurityRecords(ctx, s.pos, func(rec []byte) {
		// A record this build cannot read is skipped (a newer gateway's).
		if r, ok := bridge.ParseSecurityRecord(rec); ok {
			recs = append(recs, r)
		}
	})
	if err != nil {
		return err
	}
	if len(recs) > 0 {
		s.state.Store(s.state.Load().apply(recs, s.tok.Secret))
	}
	s.pos = next
	s.last.Store(time.Now().UnixNano())
	return nil
}

// apply returns st with recs applied in order (st is not changed);
// secret is the delegation tokens' (none: tokens are dropped).
func (st *secState) apply(recs []bridge.SecurityRecord, secret []byte) *secState {
	n := &secState{
		acls:         append([]bridge.ACLBinding(nil), st.acls...),
		creds:        make(map[credKey]scram.Credential, len(st.creds)),
		dropped:      make(map[credKey]bool, len(st.dropped)),
		tokens:       make(map[string]*token, len(st.tokens)),
		tokensByHMAC: make(map[string]*token, len(st.tokensByHMAC)),
		quotas:       st.quotas,
		quotaKeys:    st.quotaKeys,
	}
	for k, v := range st.tokens {
		n.tokens[k] = v
	}
	for k, v := range st.tokensByHMAC {
		n.tokensByHMAC[k] = v
	}
	ownQuotas := false // n.quotas is still st's
	for k, v := range st.creds {
		n.creds[k] = v
	}
	for k, v := range st.dropped {
		n.dropped[k] = v
	}
	for _, r := range recs {
		switch r.Kind {
		case bridge.SecACLAdd:
			if !containsBinding(n.acls, r.ACL) {
				n.acls = append(n.acls, r.ACL)
			}
		case bridge.SecACLRemove:
			out := n.acls[:0]
			for _, b := range n.acls {
				if b != r.ACL {
					out = append(out, b)
				}
			}
			n.acls = out
		case bridge.SecScramSet:
			m := scram.Mechanism(r.Scram.Mechanism)
			k := credKey{r.Scram.Name, m}
			n.creds[k] = scram.Credential{Mech: m, Salt: r.Scram.Salt, Iterations: int(r.Scram.Iterations),
				StoredKey: r.Scram.StoredKey, ServerKey: r.Scram.ServerKey}
			delete(n.dropped, k)
		case bridge.SecScramDelete:
			k := credKey{r.Scram.Name, scram.Mechanism(r.Scram.Mechanism)}
			delete(n.creds, k)
			n.dropped[k] = true
		case bridge.SecTokenSet, bridge.SecTokenRemove:
			n.applyToken(secret, r.Token)
		case bridge.SecQuota:
			if !ownQuotas {
				n.quotas, ownQuotas = n.quotas.clone(), true
			}
			n.quotas.set(r.Quota)
		}
	}
	if ownQuotas {
		n.quotaKeys = n.quotas.keys()
	}
	n.index()
	return n
}

func containsBinding(bs []bridge.ACLBinding, b bridge.ACLBinding) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// errNoSecurityLog: the store cannot keep ACLs or credentials.
var errNoSecurityLog = errors.New("this store keeps no security log")

// write appends recs and reads the log back, so the change is in the
// snapshot before the caller answers. A worker; waits for the store.
func (s *Security) write(ctx context.Context, recs [][]byte) error {
	if s == nil || s.store == nil {
		return errNoSecurityLog
	}
	for _, r := range recs {
		if err := s.store.AppendSecurityRecord(ctx, r); err != nil {
			if errors.Is(err, bridge.ErrNotSupported) {
				return errNoSecurityLog
			}
			return err
		}
	}
	return s.refresh(ctx)
}

// quotas is the current set of client quotas and the keys some entity
// sets (shared: read only). Any goroutine; never blocks.
func (s *Security) quotas() (quotaMap, map[string]bool) {
	if s == nil {
		return nil, nil
	}
	s.maybeRefresh()
	st := s.state.Load()
	return st.quotas, st.quotaKeys
}

// bindings is the current ACL set (shared: read only).
func (s *Security) bindings() []bridge.ACLBinding {
	if s == nil {
		return nil
	}
	return s.state.Load().acls
}

// scramUsers calls fn with every credential a login would find: Kafka's
// set ones and the users file's not deleted through Kafka.
func (s *Security) scramUsers(fn func(name string, m scram.Mechanism, iterations int)) {
	if s == nil {
		return
	}
	st := s.state.Load()
	seen := map[credKey]bool{}
	for k, c := range st.creds {
		seen[k] = true
		fn(k.name, k.mech, c.Iterations)
	}
	if each, ok := s.file.(interface {
		Each(func(string, scram.Credential))
	}); ok {
		each.Each(func(name string, c scram.Credential) {
			k := credKey{name, c.Mech}
			if !seen[k] && !st.dropped[k] {
				fn(name, c.Mech, c.Iterations)
			}
		})
	}
}
