// Package rpc holds core's gRPC servers: CoreService (CoreServer: models, balance, token
// counts and the priced streaming RPCs) and CatalogService, with the interceptors every call
// passes through. The operator's AdminService is core/admin's; the status site's read is
// core/statusdata's.
//
// One client request, followed through the package:
//
//   - inprocess.go: the front's HTTP handler calls InProcess, the named front → core hop;
//   - generate.go, embed.go, forward.go, realtime.go: the priced RPCs;
//   - billed.go: one admitted request, admit → hold → charge → settle/finish, and what the
//     client is told at each step; every priced RPC goes through it, and its money is a
//     billing.Request (core/billing), where the money rules live once;
//   - routes.go: the upstream attempts in fallback order (core/routing picks the routes);
//   - errors.go: the one place where errors become gRPC statuses;
//   - metadata.go: the key and request id a caller sends, and what a socket caller may not.
package rpc
