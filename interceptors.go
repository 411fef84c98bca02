package main

import (
	"log/slog"

	"google.golang.org/grpc"

	"modelgateway/core/admin"
	"modelgateway/core/rpc"
	"modelgateway/core/statusdata"
)

// unaryChain is core's unary interceptors, which the socket and the in-process channel run
// in this order, outermost first (all): the status site's count of admin calls, the mapping
// of errors to statuses, the admin deadline, the key limits and, when admin is served, the
// admin token (auth, nil otherwise).
type unaryChain struct {
	adminCount, errs, deadline, limits, auth grpc.UnaryServerInterceptor
}

func newUnaryChain(rec *statusdata.Recorder, log *slog.Logger, limiter *rpc.KeyLimiter, adminToken string) unaryChain {
	c := unaryChain{adminCount: statusdata.AdminInterceptor(rec), errs: rpc.ErrorInterceptor(log),
		deadline: admin.Deadline(admin.DefaultDeadline), limits: limiter.Unary}
	if adminToken != "" {
		c.auth = admin.Auth(adminToken)
	}
	return c
}

func (c unaryChain) all() []grpc.UnaryServerInterceptor {
	ics := []grpc.UnaryServerInterceptor{c.adminCount, c.errs, c.deadline, c.limits}
	if c.auth != nil {
		ics = append(ics, c.auth)
	}
	return ics
}

// authorize is the chain of the front's in-process Authorize (rpc.DirectCore), made before
// every priced body: only the error mapping acts on it. The admin interceptors act on
// AdminService's methods alone and the limiter on the methods a key's limits count, which
// Authorize is not (TestAuthorizeLeavesOutOnlyWhatPassesItThrough); each was an indirect call
// and a method-name check per request.
func (c unaryChain) authorize() []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{c.errs}
}
