package handlers

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/scram"
)

const (
	rtTopic   = int8(kmsg.ACLResourceTypeTopic)
	rtGroup   = int8(kmsg.ACLResourceTypeGroup)
	rtCluster = int8(kmsg.ACLResourceTypeCluster)
	ptLit     = int8(kmsg.ACLResourcePatternTypeLiteral)
	ptPre     = int8(kmsg.ACLResourcePatternTypePrefixed)
	allow     = int8(kmsg.ACLPermissionTypeAllow)
	deny      = int8(kmsg.ACLPermissionTypeDeny)
	opAll     = int8(kmsg.ACLOperationAll)
	opRd      = int8(kmsg.ACLOperationRead)
	opWr      = int8(kmsg.ACLOperationWrite)
	opDesc    = int8(kmsg.ACLOperationDescribe)
	opDel     = int8(kmsg.ACLOperationDelete)
	opAlt     = int8(kmsg.ACLOperationAlter)
	opDC      = int8(kmsg.ACLOperationDescribeConfigs)
	opAC      = int8(kmsg.ACLOperationAlterConfigs)
	opCr      = int8(kmsg.ACLOperationCreate)
)

func acl(rt, pt int8, name, principal, host string, op, perm int8) bridge.ACLBinding {
	return bridge.ACLBinding{ResourceType: rt, PatternType: pt, ResourceName: name, Principal: principal,
		Host: host, Operation: op, Permission: perm}
}

// TestACLMatcher pins the authorizer's decisions: literal, prefixed and
// wildcard patterns, wildcard principal and host, deny wins, the implied
// operations, and default deny.
func TestACLMatcher(t *testing.T) {
	t.Parallel()
	st := &secState{acls: []bridge.ACLBinding{
		acl(rtTopic, ptLit, "orders", "User:alice", "*", opWr, allow),
		acl(rtTopic, ptPre, "logs-", "User:alice", "*", opRd, allow),
		acl(rtTopic, ptLit, "logs-secret", "User:alice", "*", opAll, deny),
		acl(rtTopic, ptLit, "*", "User:*", "*", opDC, allow),
		acl(rtTopic, ptLit, "cfg", "User:bob", "*", opAC, allow),
		acl(rtTopic, ptLit, "deleteme", "User:bob", "*", opDel, allow),
		acl(rtTopic, ptLit, "alterme", "User:bob", "*", opAlt, allow),
		acl(rtTopic, ptLit, "readonly", "User:bob", "*", opRd, allow),
		acl(rtTopic, ptLit, "readonly", "User:bob", "*", opDesc, deny),
		acl(rtTopic, ptLit, "nodesc", "User:bob", "*", opAll, allow),
		acl(rtTopic, ptLit, "nodesc", "User:bob", "*", opRd, deny),
		acl(rtTopic, ptLit, "hosted", "User:carol", "10.0.0.1", opRd, allow),
		acl(rtGroup, ptPre, "app-", "User:alice", "*", opRd, allow),
		acl(rtCluster, ptLit, ClusterResource, "User:ops", "*", opAll, allow),
	}}
	cases := []struct {
		principal, host string
		op, rt          int8
		name            string
		want            bool
	}{
		{"User:alice", "1.2.3.4", opWr, rtTopic, "orders", true},
		{"User:alice", "1.2.3.4", opDesc, rtTopic, "orders", true}, // DESCRIBE implied by WRITE
		{"User:alice", "1.2.3.4", opRd, rtTopic, "orders", false},  // WRITE does not give READ
		{"User:alice", "1.2.3.4", opWr, rtTopic, "orders2", false}, // literal is exact
		{"User:alice", "1.2.3.4", opWr, rtTopic, "B", false},       // default deny
		{"User:alice", "1.2.3.4", opRd, rtTopic, "logs-app", true}, // prefixed
		{"User:alice", "1.2.3.4", opRd, rtTopic, "logs-", true},
		{"User:alice", "1.2.3.4", opRd, rtTopic, "logs", false},
		{"User:alice", "1.2.3.4", opRd, rtTopic, "logs-secret", false},   // deny ALL wins over prefixed allow
		{"User:alice", "1.2.3.4", opDesc, rtTopic, "logs-secret", false}, // and over the implied DESCRIBE
		{"User:dave", "1.2.3.4", opDC, rtTopic, "anything", true},        // User:* and LITERAL *
		{"User:dave", "1.2.3.4", opAC, rtTopic, "anything", false},
		{"User:bob", "1.2.3.4", opDC, rtTopic, "cfg", true}, // DESCRIBE_CONFIGS implied by ALTER_CONFIGS
		{"User:bob", "1.2.3.4", opDesc, rtTopic, "cfg", false},
		{"User:bob", "1.2.3.4", opDesc, rtTopic, "deleteme", true}, // by DELETE
		{"User:bob", "1.2.3.4", opDesc, rtTopic, "alterme", true},  // by ALTER
		{"User:bob", "1.2.3.4", opDC, rtTopic, "alterme", true},    // the User:* allow
		{"User:bob", "1.2.3.4", opRd, rtTopic, "readonly", true},   // a DENY of DESCRIBE does not deny READ
		{"User:bob", "1.2.3.4", opDesc, rtTopic, "readonly", false},
		{"User:bob", "1.2.3.4", opWr, rtTopic, "nodesc", true},  // ALL allows
		{"User:bob", "1.2.3.4", opRd, rtTopic, "nodesc", false}, // the READ deny wins
		{"User:bob", "1.2.3.4", opDesc, rtTopic, "nodesc", true},
		{"User:carol", "10.0.0.1", opRd, rtTopic, "hosted", true},
		{"User:carol", "10.0.0.2", opRd, rtTopic, "hosted", false},
		{"User:alice", "1.2.3.4", opRd, rtGroup, "app-1", true},
		{"User:alice", "1.2.3.4", opRd, rtTopic, "app-1", false}, // resource type matters
		{"User:ops", "1.2.3.4", opCr, rtCluster, ClusterResource, true},
		{"User:alice", "1.2.3.4", opCr, rtCluster, ClusterResource, false},
		{PrincipalAnonymous, "1.2.3.4", opDC, rtTopic, "x", true}, // User:* includes ANONYMOUS
		{PrincipalAnonymous, "1.2.3.4", opRd, rtTopic, "x", false},
	}
	indexed := &secState{acls: st.acls}
	indexed.index()
	for _, tc := range cases {
		for _, s := range []*secState{st, indexed} {
			if got := s.authorized(tc.principal, tc.host, tc.op, tc.rt, tc.name); got != tc.want {
				t.Errorf("%s@%s op %d on %d:%q = %v, want %v (indexed %v)", tc.principal, tc.host, tc.op, tc.rt, tc.name, got, tc.want, s.lit != nil)
			}
		}
	}
	if (&secState{}).authorized("User:x", "h", opRd, rtTopic, "t") {
		t.Error("no ACLs must deny (allow.everyone.if.no.acl.found=false)")
	}
	s := &Security{cfg: AuthzConfig{Enabled: true}, super: map[string]bool{"User:root": true}}
	s.state.Store(st)
	if !s.Authorized("User:root", "h", kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, "logs-secret") {
		t.Error("a super user is refused")
	}
}

func TestMayWriteSomeTopic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		acls []bridge.ACLBinding
		want bool
	}{
		{nil, false},
		{[]bridge.ACLBinding{acl(rtTopic, ptLit, "a", "User:u", "*", opWr, allow)}, true},
		{[]bridge.ACLBinding{acl(rtTopic, ptLit, "a", "User:u", "*", opRd, allow)}, false},
		{[]bridge.ACLBinding{acl(rtTopic, ptLit, "a", "User:u", "*", opWr, allow),
			acl(rtTopic, ptLit, "a", "User:u", "*", opWr, deny)}, false},
		{[]bridge.ACLBinding{acl(rtTopic, ptPre, "ab", "User:u", "*", opAll, allow),
			acl(rtTopic, ptPre, "a", "User:*", "*", opWr, deny)}, false},
		{[]bridge.ACLBinding{acl(rtTopic, ptPre, "ab", "User:u", "*", opAll, allow),
			acl(rtTopic, ptLit, "ab", "User:*", "*", opWr, deny)}, true}, // the literal deny covers one name only
		{[]bridge.ACLBinding{acl(rtTopic, ptLit, "a", "User:u", "*", opWr, allow),
			acl(rtTopic, ptLit, "*", "User:u", "*", opAll, deny)}, false},
	}
	for i, tc := range cases {
		st := &secState{acls: tc.acls}
		if got := st.mayWriteSomeTopic("User:u", "h"); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}

func TestACLFilter(t *testing.T) {
	t.Parallel()
	b := []bridge.ACLBinding{
		acl(rtTopic, ptLit, "orders", "User:a", "*", opWr, allow),
		acl(rtTopic, ptLit, "*", "User:a", "*", opRd, allow),
		acl(rtTopic, ptPre, "ord", "User:b", "h", opRd, deny),
		acl(rtGroup, ptLit, "orders", "User:a", "*", opRd, allow),
	}
	name := func(s string) *string { return &s }
	cases := []struct {
		f    aclFilter
		want []int
	}{
		{aclFilter{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, []int{0, 1, 2, 3}},
		{aclFilter{kmsg.ACLResourceTypeTopic, name("orders"), kmsg.ACLResourcePatternTypeAny, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, []int{0}},
		{aclFilter{kmsg.ACLResourceTypeTopic, name("orders"), kmsg.ACLResourcePatternTypeMatch, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, []int{0, 1, 2}},
		{aclFilter{kmsg.ACLResourceTypeTopic, name("ord"), kmsg.ACLResourcePatternTypePrefixed, nil, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}, []int{2}},
		{aclFilter{kmsg.ACLResourceTypeTopic, nil, kmsg.ACLResourcePatternTypeLiteral, name("User:a"), nil, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAny}, []int{1}},
		{aclFilter{kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil, name("h"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeDeny}, []int{2}},
	}
	for i, tc := range cases {
		var got []int
		for j := range b {
			if tc.f.matches(&b[j]) {
				got = append(got, j)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}

// asUser makes c's connection logged in as principal.
func asUser(c *Call, principal string) *Call {
	s := NewSaslConn(netip.MustParseAddr("127.0.0.1"))
	s.principal = principal
	s.authenticated.Store(true)
	c.Sasl = s
	c.ClientHost = "/127.0.0.1"
	return c
}

func doAs(tb testing.TB, g *Gateway, principal string, req kmsg.Request) kmsg.Response {
	tb.Helper()
	c := asUser(newCall(g, req.Key(), req.GetVersion()), principal)
	resp := roundTrip(tb, c, req)
	tb.Cleanup(c.RunDeferred)
	return resp
}

func withAuthz(c *Config) {
	c.Authz = AuthzConfig{Enabled: true, SuperUsers: []string{"User:admin"}}
}

// grant creates bs as User:admin and fails the test unless every one was
// created.
func grant(t *testing.T, g *Gateway, bs ...bridge.ACLBinding) {
	t.Helper()
	cr := doAs(t, g, "User:admin", createACLsReq(bs...)).(*kmsg.CreateACLsResponse)
	for _, r := range cr.Results {
		if r.ErrorCode != 0 {
			t.Fatal(cr)
		}
	}
}

// aliceGateway is a gateway with ACLs on and topics A (of partsA
// partitions) and B, where alice may do op on topic A and read group g.
func aliceGateway(t *testing.T, partsA int32, op int8) *Gateway {
	t.Helper()
	g := newGateway(t, withAuthz)
	createTopic(t, g, "A", partsA)
	createTopic(t, g, "B", 1)
	grant(t, g,
		acl(rtTopic, ptLit, "A", "User:alice", "*", op, allow),
		acl(rtGroup, ptLit, "g", "User:alice", "*", opRd, allow),
	)
	return g
}

func createACLsReq(bs ...bridge.ACLBinding) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), kmsg.ACLResourcePatternType(b.PatternType)
		c.ResourceName, c.Principal, c.Host = b.ResourceName, b.Principal, b.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, c)
	}
	return req
}

func describeAllACLs() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

// TestACLKeys runs CreateAcls, DescribeAcls and DeleteAcls through their
// handlers, pins their response bytes (testdata/wire), and checks the
// bindings survive a restart (a new Security over the same store).
func TestACLKeys(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	create := createACLsReq(
		acl(rtTopic, ptLit, "A", "User:alice", "*", opWr, allow),
		acl(rtTopic, ptPre, "logs-", "User:*", "*", opRd, allow),
		acl(rtCluster, ptLit, "not-the-cluster", "User:x", "*", opAll, allow), // INVALID_REQUEST
		acl(rtTopic, ptLit, "A", "alice", "*", opWr, allow),                   // bad principal
		acl(rtTopic, ptPre, "*", "User:x", "*", opRd, allow),                  // PREFIXED '*'
		acl(rtTopic, ptLit, "A", "User:x", "*", int8(kmsg.ACLOperationAny), allow),
	)
	cr := doAs(t, g, "User:alice", create).(*kmsg.CreateACLsResponse)
	for _, r := range cr.Results {
		if r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("alice (no ALTER on the cluster) created ACLs: %+v", cr.Results)
		}
	}
	cr = doAs(t, g, "User:admin", create).(*kmsg.CreateACLsResponse)
	wantCodes := []int16{0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, r := range cr.Results {
		if r.ErrorCode != wantCodes[i] {
			t.Errorf("creation %d: code %d, want %d (%v)", i, r.ErrorCode, wantCodes[i], r.ErrorMessage)
		}
	}
	wireGolden(t, "30_create_acls_v3_resp.hex", cr)
	// Again: nothing new, no error.
	if cr := doAs(t, g, "User:admin", createACLsReq(acl(rtTopic, ptLit, "A", "User:alice", "*", opWr, allow))).(*kmsg.CreateACLsResponse); cr.Results[0].ErrorCode != 0 {
		t.Fatal(cr.Results[0])
	}

	dr := doAs(t, g, "User:admin", describeAllACLs()).(*kmsg.DescribeACLsResponse)
	if dr.ErrorCode != 0 || len(dr.Resources) != 2 {
		t.Fatalf("describe: %+v", dr)
	}
	wireGolden(t, "29_describe_acls_v3_resp.hex", dr)
	if dr := doAs(t, g, "User:alice", describeAllACLs()).(*kmsg.DescribeACLsResponse); dr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice described ACLs: %+v", dr)
	}

	// Restart: a new Security over the same store reads the bindings back.
	s2 := newSecurity(g.Cfg, g.Store, g.Log)
	if got := s2.bindings(); len(got) != 2 {
		t.Fatalf("after restart: %+v", got)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch
	f.ResourceName = kmsg.StringPtr("A")
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	f2 := f
	f2.ResourceName = kmsg.StringPtr("nothing-matches")
	f2.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	del.Filters = []kmsg.DeleteACLsRequestFilter{f, f2}
	delr := doAs(t, g, "User:admin", del).(*kmsg.DeleteACLsResponse)
	if len(delr.Results) != 2 || len(delr.Results[0].MatchingACLs) != 1 || len(delr.Results[1].MatchingACLs) != 0 {
		t.Fatalf("delete: %+v", delr)
	}
	wireGolden(t, "31_delete_acls_v3_resp.hex", delr)
	if got := g.Sec.bindings(); len(got) != 1 || got[0].ResourceName != "logs-" {
		t.Fatalf("left after delete: %+v", got)
	}
	if err := s2.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s2.bindings(); len(got) != 1 {
		t.Fatalf("another gateway's view after delete: %+v", got)
	}
}

func TestACLKeysDisabled(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	if dr := do(t, g, describeAllACLs()).(*kmsg.DescribeACLsResponse); dr.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("%+v", dr)
	}
	cr := do(t, g, createACLsReq(acl(rtTopic, ptLit, "A", "User:alice", "*", opWr, allow))).(*kmsg.CreateACLsResponse)
	if cr.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("%+v", cr)
	}
}

// TestEnforcement: alice may write topic A only; her requests on B get
// the Kafka authorization codes, and Metadata hides B from her.
func TestEnforcement(t *testing.T) {
	t.Parallel()
	g := aliceGateway(t, 1, opWr)
	p := func(topic string) int16 {
		r := doAs(t, g, "User:alice", produceReq(9, topic, 0, valueBatch(1))).(*kmsg.ProduceResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if c := p("A"); c != 0 {
		t.Fatalf("produce A: %d", c)
	}
	if c := p("B"); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce B: %d", c)
	}
	if c := p("C-new"); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to an unknown topic: %d", c)
	}
	if r := doAs(t, g, "User:alice", fetchReq(12, "A", 0, 0)).(*kmsg.FetchResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch A without READ: %+v", r.Topics[0].Partitions[0])
	}

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.IncludeTopicAuthorizedOperations = true
	mr := doAs(t, g, "User:alice", md).(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "A" {
		t.Fatalf("all-topics metadata for alice: %+v", mr.Topics)
	}
	wantOps := int32(1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationDescribe)
	if mr.Topics[0].AuthorizedOperations != wantOps {
		t.Fatalf("authorized ops %b, want %b", mr.Topics[0].AuthorizedOperations, wantOps)
	}
	md2 := kmsg.NewPtrMetadataRequest()
	md2.Version = 12
	for _, n := range []string{"A", "B"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		md2.Topics = append(md2.Topics, rt)
	}
	mr = doAs(t, g, "User:alice", md2).(*kmsg.MetadataResponse)
	if mr.Topics[0].ErrorCode != 0 || mr.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("named metadata: %+v", mr.Topics)
	}
	if mr := doAs(t, g, "User:admin", md).(*kmsg.MetadataResponse); len(mr.Topics) != 2 {
		t.Fatalf("super user sees %d topics", len(mr.Topics))
	}
	if mr := doAs(t, g, PrincipalAnonymous, md).(*kmsg.MetadataResponse); len(mr.Topics) != 0 {
		t.Fatalf("anonymous sees %d topics", len(mr.Topics))
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version = 6
	dt.TopicNames = []string{"B"}
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("B")
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{dtt}
	if r := doAs(t, g, "User:alice", dt).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete B: %+v", r.Topics[0])
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "D", 1, 1
	ct.Topics = []kmsg.CreateTopicsRequestTopic{ctt}
	if r := doAs(t, g, "User:alice", ct).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("create D: %+v", r.Topics[0])
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = 4
	if r := doAs(t, g, "User:alice", ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 {
		t.Fatalf("InitProducerId with WRITE on a topic: %d", r.ErrorCode)
	}
	if r := doAs(t, g, "User:nobody", ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("InitProducerId without any WRITE: %d", r.ErrorCode)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version = 9
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis = "other", "consumer", 10000
	if r := doAs(t, g, "User:alice", jg).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("join another group: %d", r.ErrorCode)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 9, "g", -1
	for _, n := range []string{"A", "B"} {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = n
		pp := kmsg.NewOffsetCommitRequestTopicPartition()
		pp.Offset = 0
		t.Partitions = append(t.Partitions, pp)
		oc.Topics = append(oc.Topics, t)
	}
	ocr := doAs(t, g, "User:alice", oc).(*kmsg.OffsetCommitResponse)
	codes := map[string]int16{}
	for _, tt := range ocr.Topics {
		codes[tt.Topic] = tt.Partitions[0].ErrorCode
	}
	if codes["A"] != kerr.TopicAuthorizationFailed.Code || codes["B"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("offset commit without READ on the topics: %v", codes)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups, dg.IncludeAuthorizedOperations = 5, []string{"g", "other"}, true
	dgr := doAs(t, g, "User:alice", dg).(*kmsg.DescribeGroupsResponse)
	if dgr.Groups[0].ErrorCode != 0 || dgr.Groups[0].AuthorizedOperations != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe ||
		dgr.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe groups: %+v", dgr.Groups)
	}
}

// TestAlterUserScram sets a credential as kafka-configs sends it (a salted
// password), checks a login would find it (and verify the password), then
// deletes it.
func TestAlterUserScram(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	salt := []byte("0123456789abcdef")
	salted256, _ := pbkdf2.Key(sha256.New, "alice-secret", salt, 8192, 32)
	salted512, _ := pbkdf2.Key(sha512.New, "alice-secret", salt, 8192, 64)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := func(name string, mech int8, iter int32, salted []byte) {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iter, salt, salted
		req.Upsertions = append(req.Upsertions, u)
	}
	up("alice", 1, 8192, salted256)
	up("alice", 2, 8192, salted512)
	up("bad-iter", 1, 100, salted256)
	up("bad-mech", 3, 8192, salted256)
	up("twice", 1, 8192, salted256)
	up("twice", 1, 8192, salted256)
	up("short", 2, 8192, salted256)
	if r := doAs(t, g, "User:alice", req).(*kmsg.AlterUserSCRAMCredentialsResponse); r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice altered credentials: %+v", r)
	}
	r := doAs(t, g, "User:admin", req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	want := map[string]int16{"alice": 0, "bad-iter": kerr.UnacceptableCredential.Code, "bad-mech": kerr.UnsupportedSaslMechanism.Code,
		"twice": kerr.DuplicateResource.Code, "short": kerr.UnacceptableCredential.Code}
	if len(r.Results) != len(want) {
		t.Fatalf("results: %+v", r.Results)
	}
	for _, res := range r.Results {
		if res.ErrorCode != want[res.User] {
			t.Errorf("%s: %d, want %d (%v)", res.User, res.ErrorCode, want[res.User], res.ErrorMessage)
		}
	}
	wireGolden(t, "51_alter_user_scram_credentials_v0_resp.hex", r)
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		c, ok := g.Sec.Lookup("alice", m)
		if !ok || !c.Verify("alice-secret") || c.Verify("wrong") || c.Iterations != 8192 {
			t.Fatalf("%v: found %v, credential %+v", m, ok, c)
		}
	}
	if _, ok := g.Sec.Lookup("twice", scram.SHA256); ok {
		t.Fatal("a refused user was kept")
	}

	dr := doAs(t, g, "User:admin", kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(dr.Results) != 1 || dr.Results[0].User != "alice" || len(dr.Results[0].CredentialInfos) != 2 {
		t.Fatalf("describe: %+v", dr)
	}
	wireGolden(t, "50_describe_user_scram_credentials_v0_resp.hex", dr)

	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 1
	d2 := d
	d2.Name = "nobody"
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{d, d2}
	r = doAs(t, g, "User:admin", del).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if r.Results[0].ErrorCode != 0 || r.Results[1].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("delete: %+v", r.Results)
	}
	if _, ok := g.Sec.Lookup("alice", scram.SHA256); ok {
		t.Fatal("deleted credential still found")
	}
	if _, ok := g.Sec.Lookup("alice", scram.SHA512); !ok {
		t.Fatal("the other mechanism went too")
	}
	// A restarted gateway sees the same.
	s2 := newSecurity(g.Cfg, g.Store, g.Log)
	if _, ok := s2.Lookup("alice", scram.SHA256); ok {
		t.Fatal("deleted credential back after restart")
	}
	if c, ok := s2.Lookup("alice", scram.SHA512); !ok || !c.Verify("alice-secret") {
		t.Fatal("credential lost in restart")
	}
}

// BenchmarkAuthorized is one check against 1000 bindings (a scan of the
// snapshot), the cost Produce pays per topic with --authorizer acl.
func BenchmarkAuthorized(b *testing.B) {
	st := &secState{}
	for i := range 1000 {
		st.acls = append(st.acls, acl(rtTopic, ptLit, "topic-"+string(rune('a'+i%26))+string(rune('a'+i/26%26)), "User:u"+string(rune('a'+i%7)), "*", opWr, allow))
	}
	st.acls = append(st.acls, acl(rtTopic, ptLit, "orders", "User:alice", "*", opWr, allow))
	st.index()
	s := &Security{cfg: AuthzConfig{Enabled: true}, super: map[string]bool{}}
	s.state.Store(st)
	s.last.Store(1 << 62) // no refresh
	b.ReportAllocs()
	for b.Loop() {
		if !s.Authorized("User:alice", "127.0.0.1", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "orders") {
			b.Fatal("refused")
		}
	}
}

// The consumer group protocol's keys (68, 69) are checked as Kafka checks
// them: READ on the group and DESCRIBE on every subscribed topic to
// heartbeat, DESCRIBE on the group to describe it.
func TestEnforcementConsumerProtocol(t *testing.T) {
	t.Parallel()
	g := aliceGateway(t, 2, opRd)
	beat := func(group string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, group, "m-1", 0
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 30000, topics
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return doAs(t, g, "User:alice", hb).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	if r := beat("other", "A"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat to another group: %d", r.ErrorCode)
	}
	if r := beat("g", "A", "B"); r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "B") || strings.Contains(*r.ErrorMessage, "A") {
		t.Fatalf("subscribing to B without DESCRIBE: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := beat("g", "A"); r.ErrorCode != 0 || r.MemberEpoch < 1 {
		t.Fatalf("subscribing to A: %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Version, d.Groups, d.IncludeAuthorizedOperations = 1, []string{"g", "other"}, true
	dr := doAs(t, g, "User:alice", d).(*kmsg.ConsumerGroupDescribeResponse)
	if dr.Groups[0].ErrorCode != 0 || len(dr.Groups[0].Members) != 1 ||
		dr.Groups[0].AuthorizedOperations != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
		t.Fatalf("describe g: %+v", dr.Groups[0])
	}
	if dr.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe other: %+v", dr.Groups[1])
	}
}

// A client certificate's subject is the principal ACLs name on an mTLS
// listener; a SASL login on the same connection takes precedence.
func TestTLSPrincipalAuthorized(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	createTopic(t, g, "A", 1)
	grant(t, g, acl(rtTopic, ptLit, "A", "User:CN=writer,O=test", "*", opWr, allow))
	produceAs := func(tlsSubject string, sasl string) int16 {
		req := produceReq(9, "A", 0, valueBatch(1))
		c := newCall(g, req.Key(), req.GetVersion())
		if sasl != "" {
			asUser(c, sasl)
		}
		c.TLSPrincipal = tlsSubject
		t.Cleanup(c.RunDeferred)
		return roundTrip(t, c, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produceAs("CN=writer,O=test", ""); code != 0 {
		t.Fatalf("certificate subject with WRITE: %d", code)
	}
	if code := produceAs("CN=other,O=test", ""); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("another certificate: %d", code)
	}
	if code := produceAs("CN=writer,O=test", "User:bob"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("SASL user bob over the writer's certificate: %d", code)
	}
}
