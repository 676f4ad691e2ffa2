// DescribeUserScramCredentials: v0-0
//
// Behavior:
//   - Lists each user's SCRAM mechanisms and iteration counts (never a
//     salt or key): the credentials set through AlterUserScramCredentials
//     (kept in the store's security log) and those of --sasl-users-file
//     not deleted through Kafka. Users null or empty: every user, sorted
//     by name. A named user with no credential is RESOURCE_NOT_FOUND; a
//     user named twice is DUPLICATE_RESOURCE.
//   - Needs DESCRIBE on the CLUSTER when authorization is on; else the
//     top-level error is CLUSTER_AUTHORIZATION_FAILED. With authorization
//     off anyone may describe, as on a Kafka broker without an authorizer.
//
// Version notes:
//   - v0 is flexible (KIP-554).

package handlers

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/scram"
)

func init() {
	register(Spec{Key: 50, MinVersion: 0, MaxVersion: 0, Handle: typed(describeUserScram)})
}

func describeUserScram(c *Call, req *kmsg.DescribeUserSCRAMCredentialsRequest, resp *kmsg.DescribeUserSCRAMCredentialsResponse) (kmsg.Response, error) {
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	users := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	c.G.Sec.scramUsers(func(name string, m scram.Mechanism, iterations int) {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = int8(m), int32(iterations)
		users[name] = append(users[name], ci)
	})
	result := func(name string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		infos := users[name]
		sort.Slice(infos, func(i, j int) bool { return infos[i].Mechanism < infos[j].Mechanism })
		r.CredentialInfos = infos
		if len(infos) == 0 {
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = strp("Attempt to describe a user credential that does not exist: " + name)
			r.CredentialInfos = []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
		}
		return r
	}
	if len(req.Users) == 0 {
		names := make([]string, 0, len(users))
		for n := range users {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			resp.Results = append(resp.Results, result(n))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		if count[u.Name] > 1 {
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User = u.Name
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = strp("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
			r.CredentialInfos = []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
			resp.Results = append(resp.Results, r)
			continue
		}
		resp.Results = append(resp.Results, result(u.Name))
	}
	return resp, nil
}
