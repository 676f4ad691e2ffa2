package handlers

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// The rate and throttle time follow Kafka's Rate over 11 one-second
// samples and QuotaUtils.throttleTime; the numbers are worked by hand.
func TestRateStatKafkaMath(t *testing.T) {
	t.Parallel()
	var r rateStat
	r.record(1000, 0)
	// One sample, no time elapsed: the window counts as 10 whole windows.
	if w := r.windowMs(0); w != 10_000 {
		t.Fatalf("window %d, want 10000", w)
	}
	if got := r.rate(0); got != 100 {
		t.Fatalf("rate %v, want 100", got)
	}
	if ms := r.throttleMs(100, 0); ms != 0 {
		t.Fatalf("at the limit throttled %d ms", ms)
	}
	// 1100 bytes over 10 s against 100 B/s: (110-100)/100 * 10000 ms.
	r.record(100, 0)
	if ms := r.throttleMs(100, 0); ms != 1000 {
		t.Fatalf("throttle %d, want 1000", ms)
	}
	// 5.5 s later: still 10.5 s of window (5 whole ones elapsed, 5 added),
	// 1100/10.5 = 104.76 B/s, (4.76/100) * 10500 = 500 ms.
	if ms := r.throttleMs(100, 5500); ms != 500 {
		t.Fatalf("throttle at 5.5s %d, want 500", ms)
	}
	// A record 1.2 s in opens the next sample.
	r.record(10, 1200)
	if len(r.samples) != 2 || r.cur != 1 {
		t.Fatalf("samples %d cur %d", len(r.samples), r.cur)
	}
	// 11 windows after the last event every sample is purged.
	if got := r.rate(1200 + quotaSamples*quotaWindowMs); got != 0 {
		t.Fatalf("rate after the samples expired %v", got)
	}
	// The ring holds samples+1 samples and reuses the oldest.
	var ring rateStat
	for i := int64(0); i < 30; i++ {
		ring.record(1, i*quotaWindowMs)
	}
	if len(ring.samples) != quotaSamples+1 {
		t.Fatalf("%d samples kept", len(ring.samples))
	}
	// The sample last written 11 windows ago is purged; the oldest left
	// started 10 s ago: 11 samples of 1 over 10 s.
	if got, want := ring.rate(29*quotaWindowMs), 1.1; got != want {
		t.Fatalf("steady rate %v, want %v", got, want)
	}
}

// Kafka's precedence of entities, per quota key: the most specific that
// sets the key decides both the limit and whose bytes it counts.
func TestQuotaPrecedence(t *testing.T) {
	t.Parallel()
	u, c := quotaNamed("alice"), quotaNamed("app")
	type set struct {
		e quotaEntity
		v float64
	}
	cases := []struct {
		name  string
		sets  []set
		tags  quotaTags
		limit float64
		ok    bool
	}{
		{"none", nil, quotaTags{"", "app"}, 0, false},
		{"client default", []set{{quotaEntity{client: quotaDefault}, 1}}, quotaTags{"", "app"}, 1, true},
		{"client over default", []set{{quotaEntity{client: quotaDefault}, 1}, {quotaEntity{client: c}, 2}}, quotaTags{"", "app"}, 2, true},
		{"default user over client", []set{{quotaEntity{client: c}, 2}, {quotaEntity{user: quotaDefault}, 3}}, quotaTags{"alice", ""}, 3, true},
		{"default user+client over default user", []set{{quotaEntity{user: quotaDefault}, 3},
			{quotaEntity{user: quotaDefault, client: quotaDefault}, 4}}, quotaTags{"alice", "app"}, 4, true},
		{"default user+client id over default user+default client", []set{{quotaEntity{user: quotaDefault, client: quotaDefault}, 4},
			{quotaEntity{user: quotaDefault, client: c}, 5}}, quotaTags{"alice", "app"}, 5, true},
		{"user over default user+client", []set{{quotaEntity{user: quotaDefault, client: c}, 5}, {quotaEntity{user: u}, 6}},
			quotaTags{"alice", ""}, 6, true},
		{"user+default client over user", []set{{quotaEntity{user: u}, 6}, {quotaEntity{user: u, client: quotaDefault}, 7}},
			quotaTags{"alice", "app"}, 7, true},
		{"user+client over all", []set{{quotaEntity{user: u, client: quotaDefault}, 7}, {quotaEntity{user: u, client: c}, 8},
			{quotaEntity{client: c}, 2}}, quotaTags{"alice", "app"}, 8, true},
		{"another user's quota", []set{{quotaEntity{user: quotaNamed("bob")}, 9}}, quotaTags{"", "app"}, 0, false},
	}
	for _, tc := range cases {
		q := quotaMap{}
		for _, s := range tc.sets {
			q[s.e] = map[string]float64{quotaProducerByteRate: s.v}
		}
		// Another key's quota never decides this one.
		q[quotaEntity{user: u, client: c}] = map[string]float64{quotaConsumerByteRate: 99}
		if tc.name == "user+client over all" {
			q[quotaEntity{user: u, client: c}] = map[string]float64{quotaProducerByteRate: 8, quotaConsumerByteRate: 99}
		}
		tags, limit, ok := q.resolve(quotaProducerByteRate, "alice", "app")
		if tags != tc.tags || limit != tc.limit || ok != tc.ok {
			t.Errorf("%s: got %+v %v %v, want %+v %v %v", tc.name, tags, limit, ok, tc.tags, tc.limit, tc.ok)
		}
	}
	q := quotaMap{
		{ip: quotaDefault}:                 {quotaConnectionCreationRate: 5},
		{ip: quotaNamed("10.0.0.1")}:       {quotaConnectionCreationRate: 1},
		{ip: quotaNamed("::ffff:1.2.3.4")}: {quotaConnectionCreationRate: 2},
	}
	for ip, want := range map[string]float64{"10.0.0.1": 1, "10.0.0.2": 5, "1.2.3.4": 2} {
		if got, ok := q.ipRate(netip.MustParseAddr(ip)); !ok || got != want {
			t.Errorf("ip %s: %v %v, want %v", ip, got, ok, want)
		}
	}
}

func quotaEntry(ops map[string]float64, ents ...string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i+1 < len(ents); i += 2 {
		ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ent.Type = ents[i]
		if ents[i+1] != "<default>" {
			ent.Name = strp(ents[i+1])
		}
		e.Entity = append(e.Entity, ent)
	}
	for k, v := range ops {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value, op.Remove = k, v, v < 0
		e.Ops = append(e.Ops, op)
	}
	return e
}

func alterQuotas(t *testing.T, g *Gateway, validate bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version, req.ValidateOnly, req.Entries = 1, validate, entries
	return do(t, g, req).(*kmsg.AlterClientQuotasResponse).Entries
}

func describeQuotas(t *testing.T, g *Gateway, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Version, req.Strict, req.Components = 1, strict, comps
	return do(t, g, req).(*kmsg.DescribeClientQuotasResponse)
}

func quotaComp(typ string, mt kmsg.QuotasMatchType, match *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, mt, match
	return c
}

// describedText is a compact text of the entries: "user=alice,client-id=*:k=v;".
func describedText(es []kmsg.DescribeClientQuotasResponseEntry) string {
	var b bytes.Buffer
	for _, e := range es {
		for i, p := range e.Entity {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.Type + "=")
			if p.Name == nil {
				b.WriteString("*")
			} else {
				b.WriteString(*p.Name)
			}
		}
		for _, v := range e.Values {
			b.WriteString(":" + v.Key + "=" + itoa(int32(v.Value)))
		}
		b.WriteByte(';')
	}
	return b.String()
}

// Describe answers what was set, with Kafka's EXACT / DEFAULT / SPECIFIED
// matching and strict; validate_only sets nothing; removal removes.
func TestClientQuotasDescribeMatching(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for _, r := range alterQuotas(t, g, true, quotaEntry(map[string]float64{quotaProducerByteRate: 1}, "user", "zed")) {
		if r.ErrorCode != 0 {
			t.Fatal(r)
		}
	}
	if got := describedText(describeQuotas(t, g, false).Entries); got != "" {
		t.Fatalf("validate_only set %q", got)
	}
	res := alterQuotas(t, g, false,
		quotaEntry(map[string]float64{quotaProducerByteRate: 100, quotaConsumerByteRate: 200}, "user", "alice"),
		quotaEntry(map[string]float64{quotaProducerByteRate: 300}, "user", "alice", "client-id", "app"),
		quotaEntry(map[string]float64{quotaProducerByteRate: 400}, "user", "<default>", "client-id", "<default>"),
		quotaEntry(map[string]float64{quotaRequestPercentage: 50}, "client-id", "app"),
		quotaEntry(map[string]float64{quotaConnectionCreationRate: 10}, "ip", "10.0.0.1"),
	)
	for _, r := range res {
		if r.ErrorCode != 0 {
			t.Fatal(r.ErrorCode, *r.ErrorMessage)
		}
	}
	alice, app := strp("alice"), strp("app")
	cases := []struct {
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   string
	}{
		{false, nil, "client-id=app:request_percentage=50;ip=10.0.0.1:connection_creation_rate=10;" +
			"user=alice,client-id=app:producer_byte_rate=300;user=alice:consumer_byte_rate=200:producer_byte_rate=100;" +
			"user=*,client-id=*:producer_byte_rate=400;"},
		{true, nil, ""},
		{false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, alice)},
			"user=alice,client-id=app:producer_byte_rate=300;user=alice:consumer_byte_rate=200:producer_byte_rate=100;"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, alice)},
			"user=alice:consumer_byte_rate=200:producer_byte_rate=100;"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeDefault, nil)},
			"user=*,client-id=*:producer_byte_rate=400;"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeDefault, nil)}, ""},
		{false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("client-id", kmsg.QuotasMatchTypeAny, nil)},
			"client-id=app:request_percentage=50;user=alice,client-id=app:producer_byte_rate=300;user=*,client-id=*:producer_byte_rate=400;"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("client-id", kmsg.QuotasMatchTypeExact, app)},
			"client-id=app:request_percentage=50;"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeAny, nil),
			quotaComp("client-id", kmsg.QuotasMatchTypeExact, app)}, "user=alice,client-id=app:producer_byte_rate=300;"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{quotaComp("ip", kmsg.QuotasMatchTypeAny, nil)},
			"ip=10.0.0.1:connection_creation_rate=10;"},
	}
	for i, tc := range cases {
		resp := describeQuotas(t, g, tc.strict, tc.comps...)
		if resp.ErrorCode != 0 {
			t.Fatalf("case %d: code %d", i, resp.ErrorCode)
		}
		if got := describedText(resp.Entries); got != tc.want {
			t.Errorf("case %d: got\n%s\nwant\n%s", i, got, tc.want)
		}
	}
	// Removal, of a set key and of one never set.
	for _, r := range alterQuotas(t, g, false, quotaEntry(map[string]float64{quotaProducerByteRate: -1, quotaRequestPercentage: -1}, "user", "alice")) {
		if r.ErrorCode != 0 {
			t.Fatal(r)
		}
	}
	got := describedText(describeQuotas(t, g, true, quotaComp("user", kmsg.QuotasMatchTypeExact, alice)).Entries)
	if got != "user=alice:consumer_byte_rate=200;" {
		t.Fatalf("after removal %q", got)
	}
	// Filter refusals, with Kafka's codes and messages.
	refusals := []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
		msg   string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("", kmsg.QuotasMatchTypeAny, nil)}, kerr.InvalidRequest.Code, "Invalid empty entity type."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeAny, nil), quotaComp("user", kmsg.QuotasMatchTypeDefault, nil)},
			kerr.InvalidRequest.Code, "Entity type user cannot appear more than once in the filter."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("group", kmsg.QuotasMatchTypeAny, nil)}, kerr.UnsupportedVersion.Code, "Unsupported entity type group"},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeExact, nil)}, kerr.InvalidRequest.Code,
			"Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeDefault, alice)}, kerr.InvalidRequest.Code,
			"Request specified MATCH_TYPE_DEFAULT, but also specified a match string."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", kmsg.QuotasMatchTypeAny, alice)}, kerr.InvalidRequest.Code,
			"Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("user", 7, nil)}, kerr.InvalidRequest.Code, "Unknown match type 7"},
		{[]kmsg.DescribeClientQuotasRequestComponent{quotaComp("ip", kmsg.QuotasMatchTypeAny, nil), quotaComp("user", kmsg.QuotasMatchTypeAny, nil)},
			kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
	}
	for i, r := range refusals {
		resp := describeQuotas(t, g, false, r.comps...)
		if resp.ErrorCode != r.code || resp.ErrorMessage == nil || *resp.ErrorMessage != r.msg || resp.Entries != nil {
			t.Errorf("refusal %d: %d %v %v", i, resp.ErrorCode, resp.ErrorMessage, resp.Entries)
		}
	}
}

// AlterClientQuotas refuses what a Kafka controller refuses, with its
// messages; an entity with an error changes nothing, the others apply.
func TestAlterClientQuotasRefusals(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	dupKey := quotaEntry(nil, "user", "dup")
	for range 2 {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = quotaProducerByteRate, 10
		dupKey.Ops = append(dupKey.Ops, op)
	}
	cases := []struct {
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string
	}{
		{quotaEntry(map[string]float64{quotaProducerByteRate: 1}), "Invalid empty client quota entity"},
		{quotaEntry(map[string]float64{quotaProducerByteRate: 1}, "group", "g"), "Unhandled client quota entity type: group"},
		{quotaEntry(map[string]float64{quotaProducerByteRate: 1}, "user", ""), "Empty user not supported"},
		{quotaEntry(map[string]float64{quotaConnectionCreationRate: 1}, "ip", "1.2.3.4", "user", "u"),
			"Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{quotaEntry(map[string]float64{quotaConnectionCreationRate: 1}, "ip", "no such host.invalid"), "no such host.invalid is not a valid IP or resolvable host."},
		{quotaEntry(map[string]float64{"linger_ms": 1}, "user", "u"), "Invalid configuration key linger_ms"},
		{quotaEntry(map[string]float64{quotaConnectionCreationRate: 1}, "user", "u"), "Invalid configuration key connection_creation_rate"},
		{quotaEntry(map[string]float64{quotaProducerByteRate: 1}, "ip", "1.2.3.4"), "Invalid configuration key producer_byte_rate"},
		{quotaEntry(map[string]float64{quotaProducerByteRate: 0}, "user", "u"), "Quota producer_byte_rate must be greater than 0"},
		{quotaEntry(map[string]float64{quotaConsumerByteRate: 1.5}, "client-id", "c"), "consumer_byte_rate cannot be a fractional value."},
		{quotaEntry(map[string]float64{quotaConnectionCreationRate: 3e9}, "ip", "<default>"), "Proposed value for connection_creation_rate is too large for an INT."},
		{quotaEntry(map[string]float64{quotaProducerByteRate: 1e19}, "user", "u"), "Proposed value for producer_byte_rate is too large for a LONG."},
		{dupKey, "Ignoring duplicate entity ClientQuotaEntity(entries={user=dup})"},
	}
	for _, tc := range cases {
		res := alterQuotas(t, g, false, tc.entry, quotaEntry(map[string]float64{quotaRequestPercentage: 12.5}, "user", "ok"))
		if len(res) != 2 || res[0].ErrorCode != kerr.InvalidRequest.Code || res[0].ErrorMessage == nil || *res[0].ErrorMessage != tc.msg {
			t.Errorf("%q: %+v", tc.msg, res)
			continue
		}
		if res[1].ErrorCode != 0 {
			t.Errorf("%q: the valid entity failed: %+v", tc.msg, res[1])
		}
	}
	got := describedText(describeQuotas(t, g, false).Entries)
	if got != "user=ok:request_percentage=12;" {
		t.Fatalf("an entity with an error changed something: %q", got)
	}
	// Without ALTER_CONFIGS on the cluster: every entry refused.
	ga := newGateway(t, withAuthz)
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{quotaEntry(map[string]float64{quotaProducerByteRate: 1}, "user", "u")}
	resp := doAs(t, ga, "User:alice", req).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("%+v", resp)
	}
	dreq := kmsg.NewPtrDescribeClientQuotasRequest()
	dreq.Version = 1
	if d := doAs(t, ga, "User:alice", dreq).(*kmsg.DescribeClientQuotasResponse); d.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("%+v", d)
	}
}

// Quotas are security-log records: a gateway over the same store after a
// restart answers them.
func TestClientQuotasSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openEmbedded(t, dir)
	g := newGatewayOn(t, st)
	alterQuotas(t, g, false, quotaEntry(map[string]float64{quotaProducerByteRate: 1024}, "client-id", "<default>"))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2 := openEmbedded(t, dir)
	g2 := newGatewayOn(t, st2)
	if got := describedText(describeQuotas(t, g2, false).Entries); got != "client-id=*:producer_byte_rate=1024;" {
		t.Fatalf("after restart %q", got)
	}
	// Another gateway on the same log (a cluster on one Iggy) learns a
	// change when it re-reads the log, as it learns ACLs.
	g3 := newGatewayOn(t, st2, func(c *Config) { c.Authz.RefreshEvery = 10 * time.Millisecond })
	alterQuotas(t, g2, false, quotaEntry(map[string]float64{quotaProducerByteRate: 2048}, "client-id", "<default>"))
	await.Until(t, 10*time.Second, func() error {
		if got := describedText(describeQuotas(t, g3, false).Entries); got != "client-id=*:producer_byte_rate=2048;" {
			return fmt.Errorf("the other gateway describes %q", got)
		}
		return nil
	})
}

// Produce over its byte rate carries a throttle time, in the response and
// for the loop; Fetch over its rate is answered empty with one.
func TestClientQuotasThrottleProduceAndFetch(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "q", 1)
	alterQuotas(t, g, false, quotaEntry(map[string]float64{quotaProducerByteRate: 100, quotaConsumerByteRate: 100}, "client-id", "slow"))
	value := bytes.Repeat([]byte("x"), 2000)
	produce := func(client string) (*kmsg.ProduceResponse, *Call) {
		req := produceReq(9, "q", 0, batch(rec{value: value}))
		c := newCall(g, 0, 9)
		c.Header.ClientID = []byte(client)
		c.RequestBytes = len(req.AppendTo(nil)) + 20
		resp := roundTrip(t, c, req).(*kmsg.ProduceResponse)
		return resp, c
	}
	if resp, c := produce("fast"); resp.ThrottleMillis != 0 || c.ThrottleMillis() != 0 {
		t.Fatalf("a client without a quota throttled %d", resp.ThrottleMillis)
	}
	resp, c := produce("slow")
	if resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal(resp)
	}
	// ~2100 bytes over the 10 s window against 100 B/s: about 11 s.
	if resp.ThrottleMillis < 10_000 || c.ThrottleMillis() != resp.ThrottleMillis {
		t.Fatalf("throttle %d / call %d", resp.ThrottleMillis, c.ThrottleMillis())
	}
	if st := g.QuotaStats(); st.ProduceThrottled != 1 || st.ProduceThrottleMs != int64(resp.ThrottleMillis) {
		t.Fatalf("%+v", st)
	}

	fetch := func(client string) (*kmsg.FetchResponse, *Call) {
		c := newCall(g, 1, 12)
		c.Header.ClientID = []byte(client)
		return roundTrip(t, c, fetchReq(12, "q", 0, 0)).(*kmsg.FetchResponse), c
	}
	if resp, _ := fetch("fast"); len(resp.Topics) != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 || resp.ThrottleMillis != 0 {
		t.Fatalf("unthrottled fetch %+v", resp)
	}
	fr, fc := fetch("slow")
	if fr.ThrottleMillis <= 0 || fc.ThrottleMillis() != fr.ThrottleMillis || len(fr.Topics) != 0 || fr.ErrorCode != 0 {
		t.Fatalf("throttled fetch: throttle %d, %d topics", fr.ThrottleMillis, len(fr.Topics))
	}
	// The bytes of the answer not sent are taken back off the rate: the
	// same fetch is throttled the same, not more (less by the time that
	// passed between the two, a millisecond or so on a loaded machine).
	if fr2, _ := fetch("slow"); fr2.ThrottleMillis > fr.ThrottleMillis || fr2.ThrottleMillis < fr.ThrottleMillis-500 {
		t.Fatalf("second throttle %d, first %d", fr2.ThrottleMillis, fr.ThrottleMillis)
	}
	if st := g.QuotaStats(); st.FetchThrottled != 2 {
		t.Fatalf("%+v", st)
	}
	// A Fetch's size is bounded by what the rate allows in a window.
	if got := (&Call{G: g, Header: fc.Header}).fetchQuotaBytes(); got != 1000 {
		t.Fatalf("fetch bound %d, want 100 B/s * 10 s", got)
	}
}

// The connection rate of an IP: over it, a connection is held and closed.
func TestConnectionThrottle(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	alterQuotas(t, g, false, quotaEntry(map[string]float64{quotaConnectionCreationRate: 1}, "ip", "10.1.1.1"))
	ip := netip.MustParseAddr("10.1.1.1")
	// 10 connections fit in the first window's 10 s at 1/s.
	for i := range 10 {
		if d := g.ConnectionThrottle(ip); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	if d := g.ConnectionThrottle(ip); d <= 0 || d.Milliseconds() > maxConnectionThrottleMs {
		t.Fatalf("11th connection: %v", d)
	}
	if d := g.ConnectionThrottle(netip.MustParseAddr("10.1.1.2")); d != 0 {
		t.Fatalf("another address throttled %v", d)
	}
	if st := g.QuotaStats(); st.ConnectionsThrottled != 1 {
		t.Fatalf("%+v", st)
	}
}

// request_percentage: the time a handler ran, in percent of one thread,
// against the quota; the throttle is bounded by one window and never
// lowers a byte-rate throttle already in the response.
func TestRequestPercentageThrottle(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	alterQuotas(t, g, false, quotaEntry(map[string]float64{quotaRequestPercentage: 1}, "client-id", "busy"))
	call := func(client string) *Call {
		c := newCall(g, 3, 12)
		c.Header.ClientID = []byte(client)
		return c
	}
	meta := kmsg.NewPtrMetadataResponse()
	c := call("idle")
	c.RequestThrottle(meta, 2*time.Second)
	if meta.ThrottleMillis != 0 || c.ThrottleMillis() != 0 {
		t.Fatalf("a client without a quota throttled %d", meta.ThrottleMillis)
	}
	// 2 s of handler time is 200 %, 20 %/s over the first window's 10 s,
	// against 1 %: (20-1)/1 * 10 s, bounded to one window.
	c = call("busy")
	c.RequestThrottle(meta, 2*time.Second)
	if meta.ThrottleMillis != quotaWindowMs || c.ThrottleMillis() != quotaWindowMs {
		t.Fatalf("throttle %d / call %d, want %d", meta.ThrottleMillis, c.ThrottleMillis(), quotaWindowMs)
	}
	prod := kmsg.NewPtrProduceResponse()
	prod.ThrottleMillis = 5000
	c = call("busy")
	c.RequestThrottle(prod, time.Millisecond)
	if prod.ThrottleMillis != 5000 {
		t.Fatalf("a byte-rate throttle lowered to %d", prod.ThrottleMillis)
	}
	call("busy").RequestThrottle(nil, time.Millisecond) // acks=0: no response
	if st := g.QuotaStats(); st.RequestThrottled != 3 {
		t.Fatalf("%+v", st)
	}
}
