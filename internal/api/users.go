package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
	"github.com/heraldhq/herald/internal/webpush"
)

// UsersHandler serves the routes of a user's data (service): the profile,
// push subscriptions, native devices and preferences, and the Web Push
// configuration browsers subscribe with (user token).
type UsersHandler struct {
	preferenceRules   // with the responder: h.log, h.storeError
	users             UserStore
	pushSubscriptions PushSubscriptionStore
	devices           DeviceStore
	endpoints         DeviceEndpoints
	pushHosts         webpush.HostList
	pushLoopback      bool
	vapidPublicKey    string
	now               func() time.Time
}

// UsersDeps are the user routes' collaborators. Users, PushSubscriptions,
// Preferences, Catalog, Now and Log are required.
type UsersDeps struct {
	Users             UserStore
	PushSubscriptions PushSubscriptionStore
	Preferences       PreferenceStore
	// Devices and DeviceEndpoints serve the native device routes (SNS mobile
	// push); nil: every platform answers platform_not_configured.
	Devices         DeviceStore
	DeviceEndpoints DeviceEndpoints
	// PushHosts is the allow-list of push services a subscription's
	// endpoint must name (zero value: webpush.DefaultPushServices).
	PushHosts webpush.HostList
	// AllowInsecurePushLoopback accepts push endpoints on loopback hosts
	// that PushHosts names, over http too (the local runner's push service);
	// false in AWS.
	AllowInsecurePushLoopback bool
	// VAPIDPublicKey is the Web Push application server key browsers
	// subscribe with (GET /v1/push/config); empty: push is not configured.
	VAPIDPublicKey string
	Catalog        *catalog.Catalog
	Now            func() time.Time
	Log            *slog.Logger
}

// NewUsers wires the user routes.
func NewUsers(d UsersDeps) *UsersHandler {
	return &UsersHandler{
		preferenceRules: preferenceRules{responder: responder{log: d.Log}, preferences: d.Preferences, catalog: d.Catalog},
		users:           d.Users, pushSubscriptions: d.PushSubscriptions, devices: d.Devices, endpoints: d.DeviceEndpoints,
		pushHosts: d.PushHosts, pushLoopback: d.AllowInsecurePushLoopback, vapidPublicKey: d.VAPIDPublicKey, now: d.Now,
	}
}

// UserStore is what the user profile routes need from the table.
type UserStore interface {
	GetUser(ctx context.Context, userID string) (*domain.User, error)
	// PutUser replaces the profile; a changed email lifts the suppression of
	// the old address. On return u holds what was stored.
	PutUser(ctx context.Context, u *domain.User) error
}

// userRequest is the body of PUT /v1/users/{userId}: the whole profile
// (fields left out are cleared).
type userRequest struct {
	Email         string             `json:"email"`
	Phone         string             `json:"phone"`
	Locale        string             `json:"locale"`
	Timezone      string             `json:"timezone"`
	QuietHours    *domain.QuietHours `json:"quietHours"`
	DigestMinutes *int               `json:"digestMinutes"`
}

// userView is a stored profile. The suppressed address itself is not shown;
// emailSuppressed says whether email to the current address is suppressed.
type userView struct {
	UserID          string             `json:"userId"`
	Email           string             `json:"email,omitempty"`
	Phone           string             `json:"phone,omitempty"`
	Locale          string             `json:"locale,omitempty"`
	Timezone        string             `json:"timezone,omitempty"`
	QuietHours      *domain.QuietHours `json:"quietHours,omitempty"`
	DigestMinutes   int                `json:"digestMinutes"`
	EmailSuppressed bool               `json:"emailSuppressed"`
	UpdatedAt       string             `json:"updatedAt,omitempty"` // none: devices only
	// Devices are the user's native devices (tokens masked); GET only.
	Devices *[]deviceView `json:"devices,omitempty"`
}

func userViewOf(u *domain.User) *userView {
	return &userView{
		UserID: u.ID, Email: u.Email, Phone: u.Phone, Locale: u.Locale, Timezone: u.Timezone,
		QuietHours: u.QuietHours, DigestMinutes: u.DigestMinutes,
		EmailSuppressed: u.SuppressedEmail != "" && u.SuppressedEmail == u.Email, UpdatedAt: formatTime(u.UpdatedAt),
	}
}

const maxDigestMinutes = 24 * 60

var (
	clockShape    = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	timezoneShape = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)
)

// pathUserID reads and checks the {userId} path parameter.
func pathUserID(req *request) (string, *Problem) {
	id := req.PathParameters["userId"]
	if p := validateUserID(id, ""); p != nil {
		p.Parameter = "userId"
		return "", p
	}
	return id, nil
}

func (h *UsersHandler) putUser(ctx context.Context, req *request) response {
	var ur userRequest
	userID, p := decodeUserBody(req, &ur)
	if p != nil {
		return problemResponse(p)
	}
	if p := validateUser(&ur); p != nil {
		return problemResponse(p)
	}
	u := &domain.User{ID: userID, Email: ur.Email, Phone: ur.Phone, Locale: ur.Locale, Timezone: ur.Timezone, QuietHours: ur.QuietHours}
	if ur.DigestMinutes != nil {
		u.DigestMinutes = *ur.DigestMinutes
	}
	if err := h.users.PutUser(ctx, u); err != nil {
		return h.storeError(ctx, "put user", err, nil)
	}
	h.log.InfoContext(ctx, "user saved", "userId", userID, "outcome", "saved")
	return h.userWithDevices(ctx, userID, u)
}

func validateUser(ur *userRequest) *Problem {
	if p := validateContacts(ur.Email, ur.Phone, ur.Locale, ""); p != nil {
		return p
	}
	if ur.Timezone != "" && !validTimezone(ur.Timezone) {
		return fieldProblem(http.StatusBadRequest, "invalid_timezone", "/timezone", "timezone must be an IANA time zone like Asia/Tokyo")
	}
	if q := ur.QuietHours; q != nil {
		if !clockShape.MatchString(q.Start) {
			return fieldProblem(http.StatusBadRequest, "invalid_quiet_hours", "/quietHours/start", "start must be HH:MM (00:00-23:59)")
		}
		if !clockShape.MatchString(q.End) {
			return fieldProblem(http.StatusBadRequest, "invalid_quiet_hours", "/quietHours/end", "end must be HH:MM (00:00-23:59)")
		}
		if q.Start == q.End {
			return fieldProblem(http.StatusBadRequest, "invalid_quiet_hours", "/quietHours", "start and end must differ (leave quietHours out for none)")
		}
	}
	if d := ur.DigestMinutes; d != nil && (*d < 0 || *d > maxDigestMinutes) {
		return fieldProblem(http.StatusBadRequest, "invalid_digest_minutes", "/digestMinutes", "digestMinutes must be 0 (the default window) to 1440")
	}
	return nil
}

// validTimezone accepts IANA zone names the runtime knows (the functions
// embed time/tzdata, as Lambda's provided.al2023 has no zoneinfo). "Local"
// means the server's zone, never the user's.
func validTimezone(tz string) bool {
	if len(tz) > 64 || tz == "Local" || !timezoneShape.MatchString(tz) {
		return false
	}
	_, err := time.LoadLocation(tz)
	return err == nil
}

func (h *UsersHandler) getUser(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	u, err := h.users.GetUser(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return h.devicesOnlyUser(ctx, userID)
	}
	if err != nil {
		return h.storeError(ctx, "get user", err, nil)
	}
	return h.userWithDevices(ctx, userID, u)
}

// devicesOnlyUser answers the profile of a user no profile was stored for:
// the devices when there are some (an app may register devices for users
// whose contacts live elsewhere; push reaches them all the same), without
// updatedAt; 404 user_not_found when there are none either.
func (h *UsersHandler) devicesOnlyUser(ctx context.Context, userID string) response {
	var ds []domain.Device
	if h.devices != nil {
		var err error
		if ds, err = h.devices.ListDevices(ctx, userID); err != nil {
			return h.storeError(ctx, "list devices", err, nil)
		}
	}
	if len(ds) == 0 {
		return problemResponse(&Problem{Status: http.StatusNotFound, Code: "user_not_found", Parameter: "userId", Detail: "no profile and no device stored for this user"})
	}
	devices := deviceViewsOf(ds)
	return response{status: http.StatusOK, body: &userView{UserID: userID, Devices: &devices}}
}

// decodeUserBody reads the path's userId and decodes the body of a user
// route into v.
func decodeUserBody(req *request, v any) (string, *Problem) {
	userID, p := pathUserID(req)
	if p != nil {
		return "", p
	}
	body, p := readBody(req)
	if p != nil {
		return "", p
	}
	return userID, decodeStrict(body, v)
}

// userWithDevices answers a profile with the user's native devices (tokens
// masked), as GET and PUT /v1/users/{userId} both do.
func (h *UsersHandler) userWithDevices(ctx context.Context, userID string, u *domain.User) response {
	view := userViewOf(u)
	devices := []deviceView{}
	if h.devices != nil {
		ds, err := h.devices.ListDevices(ctx, userID)
		if err != nil {
			return h.storeError(ctx, "list devices", err, nil)
		}
		devices = deviceViewsOf(ds)
	}
	view.Devices = &devices
	return response{status: http.StatusOK, body: view}
}
