// Package admin is the operator's AdminService (proto/gateway/admin/v1, contract.md): its
// RPCs, one file per part of the service, and the interceptors that guard it.
//
//   - admin.go: profiles, credits, the catalogue and fx rates;
//   - usage.go: ListUsage and GetUsageSummary, the request records read back;
//   - keys.go: keys, their policies and request limits;
//   - batches.go: ListProfileBatches, a profile's batches and their request counts;
//   - verify.go: VerifyCapabilities, which runs core/verify's prober;
//   - incidents.go: the status site's incidents and maintenances;
//   - bot.go: the chat bot's state and health;
//   - auth.go, deadline.go: the operator token and the deadline of every admin call;
//   - credentials.go: the providers whose api_key_env is unset, warned about on apply and at
//     start.
//
// It sits beside core/rpc, not under it: the request path never imports it, and the error
// interceptor that turns its errors into statuses is core/rpc's, installed around both.
package admin
