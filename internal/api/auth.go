package api

import (
	"context"
	"net/http"
)

// service guards a service route: only an IAM-authenticated caller (the
// principal API Gateway verified) may use it. The caller is never read from
// the request itself, so one service cannot act as another.
func service(r route) route {
	return func(ctx context.Context, req *request) response {
		if req.caller == "" {
			return problemResponse(&Problem{Status: http.StatusForbidden, Code: "service_route",
				Detail: "this route is for services signed with IAM credentials"})
		}
		return r(ctx, req)
	}
}

// forUser answers a route for the user resolve names — the path's
// (pathUserID, a service route) or the token's subject (me) — so a user's
// route and its service twin share one answer.
func forUser(resolve func(*request) (string, *Problem), answer func(context.Context, *request, string) response) route {
	return func(ctx context.Context, req *request) response {
		userID, p := resolve(req)
		if p != nil {
			return problemResponse(p)
		}
		return answer(ctx, req, userID)
	}
}
