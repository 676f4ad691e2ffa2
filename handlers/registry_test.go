package handlers

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sharedFiles are the non-test files of the package that serve no single
// API key.
var sharedFiles = map[string]bool{
	"registry.go": true, "call.go": true, "watch.go": true, "producer_ids.go": true,
	"errors.go": true, "topics.go": true, "topic_ids.go": true, "pool.go": true, "groups.go": true, "cluster.go": true,
	"idempotence.go": true, "configs.go": true, "group_configs.go": true, "sasl.go": true, "authz.go": true, "acls.go": true,
	// The feature flags ApiVersions advertises, where a protocol turned on
	// adds its feature.
	"features.go": true,
	// The transaction coordinator's glue (Config.Transactions).
	"txn.go": true,
	// The share coordinator's glue (Config.Shares).
	"share.go":   true,
	"streams.go": true,
	// Fetch's pipeline and sessions, kept apart from 01_fetch.go so that
	// file stays the request's skeleton.
	"fetch_pipeline.go": true, "fetch_sessions.go": true,
	// Fetch's reply built around its batches, for the loop.
	"fetch_reply.go": true,
	// Produce's acks peek for the loop (Spec.NoReply).
	"produce_acks.go": true,
	// Delegation tokens: what keys 38-41 and the SCRAM token login share.
	"tokens.go": true,
	// What Produce checks and stamps because of a topic's configs.
	"topic_policy.go": true,
	// The topic headers Produce keeps over a store that reads over the network.
	"topic_info_cache.go": true,
	// The topic states Fetch keeps over a store that reads them in one call.
	"fetch_state_cache.go": true,
	// Broker configs and loggers of keys 32, 33 and 44.
	"broker_configs.go": true, "broker_loggers.go": true,
	// Client quotas: what is set (48, 49) and what acts (0, 1, the loop).
	"quotas.go": true,
	// Transactions in cluster mode: the coordinator's state in etcd and
	// the marker requests its partitions' leaders serve.
	"txn_cluster.go": true, "txn_marks.go": true,
}

var (
	keyFileRE = regexp.MustCompile(`^([0-9]{2})_[a-z_]+\.go$`)
	headerRE  = regexp.MustCompile(`^// (\w+): v(\d+)-(\d+)$`)
)

// Every registered key has exactly one NN_name.go whose header comment names
// the registered version range, and every file is either such a file or a
// named shared file.
func TestRegistryFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[int16]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || sharedFiles[f] {
			continue
		}
		m := keyFileRE.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("%s: neither NN_name.go nor a shared file", f)
			continue
		}
		k, _ := strconv.Atoi(m[1])
		byKey[int16(k)] = f
	}
	specs := Specs()
	if len(specs) != len(byKey) {
		t.Errorf("%d specs, %d key files", len(specs), len(byKey))
	}
	for _, s := range specs {
		f, ok := byKey[s.Key]
		if !ok {
			t.Errorf("key %d has no %02d_*.go file", s.Key, s.Key)
			continue
		}
		first := firstLine(t, f)
		m := headerRE.FindStringSubmatch(first)
		if m == nil {
			t.Errorf("%s: first line %q is not `// Name: vMIN-vMAX`", f, first)
			continue
		}
		if m[2] != strconv.Itoa(int(s.MinVersion)) || m[3] != strconv.Itoa(int(s.MaxVersion)) {
			t.Errorf("%s: header says v%s-%s, registry v%d-%d", f, m[2], m[3], s.MinVersion, s.MaxVersion)
		}
	}
	for k := range byKey {
		if Lookup(k) == nil {
			t.Errorf("file %s registers no spec", byKey[k])
		}
	}
}

// The loop decides from the Spec alone (loop/traffic.go, worker.go,
// sasl.go) what it once decided by key number. These pin what each key
// tells it, so a hook left off a register call fails here.
func TestSpecTellsTheLoop(t *testing.T) {
	t.Parallel()
	key := func(k kmsg.Key) int16 { return k.Int16() }
	for _, s := range Specs() {
		checks := []struct {
			what     string
			has      bool
			wantKeys []int16
		}{
			{"NoReply", s.NoReply != nil, []int16{key(kmsg.Produce)}},
			{"LargeReply", s.LargeReply, []int16{key(kmsg.Fetch), key(kmsg.ShareFetch)}},
			{"TooNew", s.TooNew != nil, []int16{key(kmsg.ApiVersions)}},
			{"BeforeLogin", s.BeforeLogin, []int16{key(kmsg.ApiVersions)}},
			{"LoginStep", s.LoginStep, []int16{key(kmsg.SASLHandshake), key(kmsg.SASLAuthenticate)}},
			{"BareToken", s.BareToken != nil, []int16{key(kmsg.SASLAuthenticate)}},
		}
		for _, c := range checks {
			if want := slices.Contains(c.wantKeys, s.Key); c.has != want {
				t.Errorf("key %d: %s set %v, want %v", s.Key, c.what, c.has, want)
			}
		}
	}

	if t.Failed() {
		t.FailNow() // the hooks below would be nil
	}

	// Produce: no reply exactly for acks=0, at every version (the acks
	// field moves behind transactional_id at v3, compact at v9).
	p := Lookup(key(kmsg.Produce))
	for v := p.MinVersion; v <= p.MaxVersion; v++ {
		for _, acks := range []int16{-1, 0, 1} {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(v)
			req.Acks = acks
			req.TransactionID = kmsg.StringPtr("tx")
			body := req.AppendTo(nil)
			if got := p.NoReply(body, v); got != (acks == 0) {
				t.Errorf("Produce v%d acks=%d: NoReply %v", v, acks, got)
			}
		}
	}
	if p.NoReply([]byte{0}, 9) {
		t.Error("Produce: a truncated body counts as acks=0")
	}

	// ApiVersions: a too-new version is answered v0 with
	// UNSUPPORTED_VERSION (KIP-511).
	av := Lookup(key(kmsg.ApiVersions))
	resp := av.TooNew(newCall(newGateway(t), av.Key, av.MaxVersion+1)).(*kmsg.ApiVersionsResponse)
	if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("ApiVersions TooNew: version %d code %d", resp.Version, resp.ErrorCode)
	}

	// Bare SASL tokens are SaslAuthenticate v0 requests carrying the
	// token, answered with the response's token.
	bt := BareTokenSpec()
	if bt == nil || bt.Key != key(kmsg.SASLAuthenticate) {
		t.Fatalf("BareTokenSpec %+v", bt)
	}
	req, ok := bt.BareToken([]byte("\x00alice\x00pw")).(*kmsg.SASLAuthenticateRequest)
	if !ok || req.GetVersion() != 0 || string(req.SASLAuthBytes) != "\x00alice\x00pw" {
		t.Fatalf("BareToken: %+v", req)
	}
	sresp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	sresp.SASLAuthBytes = []byte("server-final")
	if got := bt.BareReply(sresp); string(got) != "server-final" {
		t.Fatalf("BareReply: %q", got)
	}
}

func firstLine(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	return sc.Text()
}

// ApiVersions advertises exactly the registry, and never the transaction keys.
func TestApiVersionsListsRegistry(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.2.3"
		resp := do(t, g, req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		specs := servedSpecs(&g.Cfg)
		if len(resp.ApiKeys) != len(specs) {
			t.Fatalf("v%d: %d keys advertised, %d registered", v, len(resp.ApiKeys), len(specs))
		}
		for i, k := range resp.ApiKeys {
			s := specs[i]
			if k.ApiKey != s.Key || k.MinVersion != s.MinVersion || k.MaxVersion != s.MaxVersion {
				t.Errorf("v%d: entry %d = %d v%d-%d, registry %d v%d-%d", v, i, k.ApiKey, k.MinVersion, k.MaxVersion, s.Key, s.MinVersion, s.MaxVersion)
			}
		}
	}
}

// ApiVersions advertises exactly the features served: group.version 1
// (KIP-848 groups), share.version 2 (share groups, on by default),
// streams.version 1 (streams groups, on by default), nothing of
// transactions, nor metadata.version. As Kafka 4.x: a v3 request gets no supported feature
// whose minimum is 0 (KIP-1022), a v4 one gets them all; finalized
// features carry an epoch >= 0 from v3 on; v0-2 have no such fields.
func TestApiVersionsFeatures(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	groupVersion := kmsg.NewApiVersionsResponseFinalizedFeature()
	groupVersion.Name, groupVersion.MinVersionLevel, groupVersion.MaxVersionLevel = "group.version", 1, 1
	groupRange := kmsg.NewApiVersionsResponseSupportedFeature()
	groupRange.Name, groupRange.MinVersion, groupRange.MaxVersion = "group.version", 0, 1
	shareVersion := kmsg.NewApiVersionsResponseFinalizedFeature()
	shareVersion.Name, shareVersion.MinVersionLevel, shareVersion.MaxVersionLevel = "share.version", 2, 2
	shareRange := kmsg.NewApiVersionsResponseSupportedFeature()
	shareRange.Name, shareRange.MinVersion, shareRange.MaxVersion = "share.version", 0, 2
	streamsVersion := kmsg.NewApiVersionsResponseFinalizedFeature()
	streamsVersion.Name, streamsVersion.MinVersionLevel, streamsVersion.MaxVersionLevel = "streams.version", 1, 1
	streamsRange := kmsg.NewApiVersionsResponseSupportedFeature()
	streamsRange.Name, streamsRange.MinVersion, streamsRange.MaxVersion = "streams.version", 0, 1
	for _, tc := range []struct {
		v         int16
		supported []kmsg.ApiVersionsResponseSupportedFeature
		finalized []kmsg.ApiVersionsResponseFinalizedFeature
	}{
		{0, nil, nil},
		{2, nil, nil},
		{3, nil, []kmsg.ApiVersionsResponseFinalizedFeature{groupVersion, shareVersion, streamsVersion}},
		{4, []kmsg.ApiVersionsResponseSupportedFeature{groupRange, shareRange, streamsRange}, []kmsg.ApiVersionsResponseFinalizedFeature{groupVersion, shareVersion, streamsVersion}},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = tc.v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.2.3"
		resp := do(t, g, req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || !reflect.DeepEqual(resp.SupportedFeatures, tc.supported) || !reflect.DeepEqual(resp.FinalizedFeatures, tc.finalized) {
			t.Errorf("v%d: code %d, supported %+v, finalized %+v; want %+v, %+v", tc.v, resp.ErrorCode, resp.SupportedFeatures, resp.FinalizedFeatures, tc.supported, tc.finalized)
		}
		if wantEpoch := tc.finalized != nil; (resp.FinalizedFeaturesEpoch >= 0) != wantEpoch {
			t.Errorf("v%d: finalized features epoch %d", tc.v, resp.FinalizedFeaturesEpoch)
		}
	}
	// A refused request and the KIP-511 v0 answer carry none.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "-bad", "1"
	if resp := do(t, g, req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != kerr.InvalidRequest.Code || resp.SupportedFeatures != nil || resp.FinalizedFeatures != nil || resp.FinalizedFeaturesEpoch != -1 {
		t.Errorf("INVALID_REQUEST answer: %+v", resp)
	}
	if resp := ApiVersionsUnsupported(newCall(g, 18, 5)).(*kmsg.ApiVersionsResponse); resp.SupportedFeatures != nil || resp.FinalizedFeatures != nil {
		t.Errorf("UNSUPPORTED_VERSION answer: %+v", resp)
	}
	// The epoch only grows from one start to the next.
	if later := newGateway(t); later.features.epoch < g.features.epoch {
		t.Errorf("epoch %d after %d", later.features.epoch, g.features.epoch)
	}
}

func TestApiVersionsSoftwareName(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	cases := []struct {
		name, version string
		ok            bool
	}{
		{"kgo", "1.2.3", true},
		{"apache-kafka-java", "3.7.0", true},
		{"librdkafka", "2.3.0-RC1", true},
		{"a", "1", true},
		{"", "1", false},
		{"kgo", "", false},
		{"-kgo", "1", false},
		{"kgo.", "1", false},
		{"k go", "1", false},
		{"kgo", "1_2", false},
		{"kgo", "1/2", false},
	}
	for _, tc := range cases {
		if got := validSoftwareField(tc.name) && validSoftwareField(tc.version); got != tc.ok {
			t.Errorf("%q %q: valid=%v want %v", tc.name, tc.version, got, tc.ok)
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = tc.name, tc.version
		resp := do(t, g, req).(*kmsg.ApiVersionsResponse)
		want := int16(0)
		if !tc.ok {
			want = kerr.InvalidRequest.Code
		}
		if resp.ErrorCode != want {
			t.Errorf("%q %q: code %d want %d", tc.name, tc.version, resp.ErrorCode, want)
		}
		if !tc.ok && len(resp.ApiKeys) != 0 {
			t.Errorf("%q %q: INVALID_REQUEST with keys", tc.name, tc.version)
		}
	}
	// v0-2 carry no software fields: always accepted.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 2
	if resp := do(t, g, req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Errorf("v2: code %d", resp.ErrorCode)
	}
}

// ApiVersions v5 (KIP-1242): a client that names this gateway's cluster
// and node, or neither, gets the key list; another cluster or node is
// REBOOTSTRAP_REQUIRED, a node without a cluster INVALID_REQUEST, both with
// no keys.
func TestApiVersionsV5ClusterCheck(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.ClusterID, c.NodeID = "c1", 7 })
	cases := []struct {
		cluster *string
		node    int32
		want    int16
	}{
		{nil, -1, 0},
		{kmsg.StringPtr("c1"), 7, 0},
		{kmsg.StringPtr("c2"), 7, kerr.RebootstrapRequired.Code},
		{kmsg.StringPtr("c1"), 8, kerr.RebootstrapRequired.Code},
		{nil, 7, kerr.InvalidRequest.Code},
	}
	for _, tc := range cases {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp := do(t, g, req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != tc.want || (tc.want == 0) != (len(resp.ApiKeys) > 0) {
			t.Errorf("cluster %v node %d: code %d with %d keys, want code %d", tc.cluster, tc.node, resp.ErrorCode, len(resp.ApiKeys), tc.want)
		}
	}
}

func TestApiVersionsUnsupported(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	resp := ApiVersionsUnsupported(newCall(g, 18, 5)).(*kmsg.ApiVersionsResponse)
	if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("version %d code %d", resp.Version, resp.ErrorCode)
	}
	if len(resp.ApiKeys) != len(servedSpecs(&g.Cfg)) {
		t.Fatalf("%d keys", len(resp.ApiKeys))
	}
	// A client decodes it as v0.
	back := kmsg.NewPtrApiVersionsResponse()
	back.Version = 0
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if back.ErrorCode != kerr.UnsupportedVersion.Code || len(back.ApiKeys) != len(servedSpecs(&g.Cfg)) {
		t.Fatalf("decoded: %+v", back)
	}
}

// The ApiVersions bodies are pinned byte for byte: any change to the
// advertised keys, versions or features shows up as a fixture diff.
// Regenerate with: go test ./handlers -run Golden -update
func TestGoldenApiVersions(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.features = newFeatureSet(servedFeatures(&g.Cfg), 1_700_000_000_000) // a fixed start
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.0.0"
		wireGolden(t, fmt.Sprintf("18_api_versions_v%d_resp.hex", v), do(t, g, req))
	}
}

// servedSpecs are the registered keys a gateway with cfg serves.
func servedSpecs(cfg *Config) []Spec {
	var out []Spec
	for _, s := range Specs() {
		if s.Gated == nil || s.Gated(cfg) {
			out = append(out, s)
		}
	}
	return out
}

// TestApiVersionsTransactionsGated: with transactions on, the transaction
// keys and transaction.version are advertised; without, neither is.
func TestApiVersionsTransactionsGated(t *testing.T) {
	t.Parallel()
	on := newGateway(t, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 2} })
	off := newGateway(t)
	for _, tc := range []struct {
		g    *Gateway
		want bool
	}{{on, true}, {off, false}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 4
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.2.3"
		resp := do(t, tc.g, req).(*kmsg.ApiVersionsResponse)
		keys := 0
		for _, k := range resp.ApiKeys {
			if k.ApiKey >= 24 && k.ApiKey <= 28 {
				keys++
			}
		}
		tv := false
		for _, f := range resp.FinalizedFeatures {
			tv = tv || (f.Name == "transaction.version" && f.MaxVersionLevel == 2)
		}
		if (keys == 5) != tc.want || (keys == 0) == tc.want || tv != tc.want {
			t.Errorf("transactions %v: %d transaction keys, transaction.version finalized %v", tc.want, keys, tv)
		}
	}
}
