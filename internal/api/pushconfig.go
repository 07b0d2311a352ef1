package api

import (
	"context"
	"net/http"
)

// pushConfig serves what a browser needs to subscribe to Web Push: the
// VAPID public key (the applicationServerKey of pushManager.subscribe). It is
// a user route so that the browser kit (web/herald-push.js) needs only the
// user's token, never a service credential; the key itself is public.
func (h *UsersHandler) pushConfig(_ context.Context, req *request) response {
	if req.subject == "" {
		return problemResponse(&Problem{Status: http.StatusUnauthorized, Code: "unauthenticated", Title: "Authentication required",
			Detail: "this route needs a user token"})
	}
	if h.vapidPublicKey == "" {
		return problemResponse(&Problem{Status: http.StatusNotFound, Code: "push_not_configured",
			Detail: "Web Push is not configured (no VAPID key)"})
	}
	return response{status: http.StatusOK, body: map[string]string{"vapidPublicKey": h.vapidPublicKey},
		headers: map[string]string{"Cache-Control": "private, max-age=300"}}
}
