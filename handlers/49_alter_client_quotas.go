// AlterClientQuotas: v0-1
//
// Behavior:
//   - Sets and removes client quotas (KIP-546) as a Kafka 4.4 controller
//     does, with its checks and messages, all INVALID_REQUEST: an entity
//     with no component, a type other than user, client-id and ip
//     ("Unhandled client quota entity type"), an empty name, ip combined
//     with user or client-id, an ip that is neither an address nor a name
//     that resolves, a key the entity does not take (user and client-id:
//     producer_byte_rate, consumer_byte_rate, request_percentage,
//     controller_mutation_rate; ip: connection_creation_rate), a value of
//     0 or less, a fraction for the integral keys (the byte rates and the
//     connection rate), a value past the key's type, a key given twice
//     for an entity or an entity given twice ("Ignoring duplicate
//     entity"). A NaN value is refused too (Kafka would keep it). An
//     entity with an error changes nothing; the others are applied.
//     Removing a key that is not set succeeds and writes nothing.
//   - What is set is kept as records in the store's security log (the
//     embedded store syncs them; on Iggy the state stream), so quotas
//     survive restarts and reach the other gateways of a cluster within
//     about a second (quotas.go). validate_only checks and writes nothing.
//   - Needs ALTER_CONFIGS on the CLUSTER when authorization is on; else
//     CLUSTER_AUTHORIZATION_FAILED for every entry. A store without a
//     security log: SECURITY_DISABLED; store failures REQUEST_TIMED_OUT /
//     UNKNOWN_SERVER_ERROR.
//   - One result per distinct entity, in request order (Kafka's order is
//     its hash map's).
//
// Version notes:
//   - v1 is flexible (KIP-546 added the key and its versions together).

package handlers

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 49, MinVersion: 0, MaxVersion: 1, Handle: typed(alterClientQuotas)})
}

// quotaAlteration is one distinct entity of the request and its outcome.
type quotaAlteration struct {
	parts []kmsg.AlterClientQuotasResponseEntryEntity // as the request named it, one per type
	code  int16
	msg   *string
	recs  [][]byte
	done  bool // answered (a later entry of the same entity only changes the answer)
}

func alterClientQuotas(c *Call, req *kmsg.AlterClientQuotasRequest, resp *kmsg.AlterClientQuotasResponse) (kmsg.Response, error) {
	if !c.Authorized(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
		for _, e := range req.Entries {
			r := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = p.Type, p.Name
				r.Entity = append(r.Entity, re)
			}
			r.ErrorCode, r.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strp("Cluster authorization failed.")
			resp.Entries = append(resp.Entries, r)
		}
		return resp, nil
	}
	current, _ := c.G.Sec.quotas()
	var order []string
	byKey := map[string]*quotaAlteration{}
	for i := range req.Entries {
		parts, key := quotaRequestEntity(req.Entries[i].Entity)
		a := byKey[key]
		if a == nil {
			a = &quotaAlteration{parts: parts}
			byKey[key] = a
			order = append(order, key)
		}
		seen := map[string]bool{}
		dup := a.done
		for _, op := range req.Entries[i].Ops {
			if seen[op.Key] {
				dup = true
			}
			seen[op.Key] = true
		}
		if dup {
			// Kafka reports a repeated key and a repeated entity alike.
			// What the entity's first entry would write stays.
			a.code, a.msg = kerr.InvalidRequest.Code, strp("Ignoring duplicate entity "+quotaEntityText(parts))
			a.done = true
			continue
		}
		a.done = true
		a.code, a.msg, a.recs = c.alterQuotaEntity(current, parts, req.Entries[i].Ops)
	}
	var recs [][]byte
	for _, k := range order {
		recs = append(recs, byKey[k].recs...)
	}
	var wcode int16
	var wmsg *string
	if len(recs) > 0 && !req.ValidateOnly {
		if err := c.G.Sec.write(c.Ctx, recs); err != nil {
			wcode, wmsg = securityErr(err)
		}
	}
	for _, k := range order {
		a := byKey[k]
		r := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range a.parts {
			re := kmsg.NewAlterClientQuotasResponseEntryEntity()
			re.Type, re.Name = p.Type, p.Name
			r.Entity = append(r.Entity, re)
		}
		r.ErrorCode, r.ErrorMessage = a.code, a.msg
		if a.code == 0 && wcode != 0 {
			r.ErrorCode, r.ErrorMessage = wcode, wmsg
		}
		resp.Entries = append(resp.Entries, r)
	}
	return resp, nil
}

// quotaRequestEntity reads an entity as Kafka's request does (a map from
// type to name: a type given twice keeps its last name, at its first
// place) and returns it with a key naming it among the request's others.
func quotaRequestEntity(ents []kmsg.AlterClientQuotasRequestEntryEntity) ([]kmsg.AlterClientQuotasResponseEntryEntity, string) {
	var parts []kmsg.AlterClientQuotasResponseEntryEntity
	at := map[string]int{}
	for _, e := range ents {
		if i, ok := at[e.Type]; ok {
			parts[i].Name = e.Name
			continue
		}
		at[e.Type] = len(parts)
		parts = append(parts, kmsg.AlterClientQuotasResponseEntryEntity{Type: e.Type, Name: e.Name})
	}
	keys := make([]string, 0, len(parts))
	for _, p := range parts {
		k := p.Type + "\x00"
		if p.Name != nil {
			k += "=" + *p.Name
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return parts, strings.Join(keys, "\x01")
}

// quotaEntityText is Kafka's ClientQuotaEntity text of a request's entity.
func quotaEntityText(parts []kmsg.AlterClientQuotasResponseEntryEntity) string {
	var sb strings.Builder
	sb.WriteString("ClientQuotaEntity(entries={")
	for i, p := range parts {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(p.Type + "=")
		if p.Name == nil {
			sb.WriteString("null")
		} else {
			sb.WriteString(*p.Name)
		}
	}
	sb.WriteString("})")
	return sb.String()
}

// alterQuotaEntity checks one entity's changes against current, as
// Kafka's ClientQuotaControlManager, and returns the records that make
// them, or the entity's error.
func (c *Call) alterQuotaEntity(current quotaMap, parts []kmsg.AlterClientQuotasResponseEntryEntity,
	ops []kmsg.AlterClientQuotasRequestEntryOp) (int16, *string, [][]byte) {
	fail := func(msg string) (int16, *string, [][]byte) { return kerr.InvalidRequest.Code, strp(msg), nil }
	if len(parts) == 0 {
		return fail("Invalid empty client quota entity")
	}
	var e quotaEntity
	for _, p := range parts {
		n := e.component(p.Type)
		if n == nil {
			return fail("Unhandled client quota entity type: " + p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return fail("Empty " + p.Type + " not supported")
		}
		*n = quotaDefault
		if p.Name != nil {
			*n = quotaNamed(*p.Name)
		}
	}
	keys := userClientQuotaKeys
	if e.ip.set {
		if e.user.set || e.client.set {
			return fail("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !e.ip.def && !c.resolvableHost(e.ip.name) {
			return fail(e.ip.name + " is not a valid IP or resolvable host.")
		}
		keys = ipQuotaKeys
	}
	var recs [][]byte
	for _, op := range ops {
		if op.Remove {
			if _, ok := current.get(e, op.Key); ok {
				rec, err := e.record(op.Key, 0, true)
				if err != nil {
					return fail(err.Error())
				}
				recs = append(recs, rec)
			}
			continue
		}
		if msg := quotaValueError(keys, op.Key, op.Value); msg != "" {
			return fail(msg)
		}
		if v, ok := current.get(e, op.Key); ok && v == op.Value {
			continue // only a change is recorded
		}
		rec, err := e.record(op.Key, op.Value, false)
		if err != nil {
			return fail(err.Error())
		}
		recs = append(recs, rec)
	}
	return 0, nil, recs
}

// quotaValueError is Kafka's check of value for key among keys; "" when
// it is valid.
func quotaValueError(keys map[string]quotaValueType, key string, value float64) string {
	t, ok := keys[key]
	switch {
	case !ok:
		return "Invalid configuration key " + key
	case value <= 0 || math.IsNaN(value):
		return "Quota " + key + " must be greater than 0"
	}
	switch t {
	case quotaInt:
		if value > math.MaxInt32 {
			return "Proposed value for " + key + " is too large for an INT."
		}
	case quotaLong:
		if value > math.MaxInt64 {
			return "Proposed value for " + key + " is too large for a LONG."
		}
	default:
		return ""
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}

// resolvableHost is Kafka's test of an ip entity name: an address, or a
// name that resolves (within a few seconds). The worker running the call.
func (c *Call) resolvableHost(name string) bool {
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}
