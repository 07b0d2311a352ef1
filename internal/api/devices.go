package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/heraldhq/herald/internal/domain"
)

// DeviceStore is what the device routes need from the table.
type DeviceStore interface {
	// DeviceOwner answers the user holding a device's token
	// (domain.ErrNotFound: none).
	DeviceOwner(ctx context.Context, deviceID string) (string, error)
	// SaveDevice stores d under userID, taking it from previousOwner;
	// domain.ErrConflict when the owner changed since it was read.
	SaveDevice(ctx context.Context, userID, previousOwner string, d domain.Device) error
	ListDevices(ctx context.Context, userID string) ([]domain.Device, error)
	GetDevice(ctx context.Context, userID, deviceID string) (domain.Device, error)
	DeleteDevice(ctx context.Context, userID, deviceID string) error
}

// DeviceEndpoints are the SNS platform endpoints of devices (snspush.Adapter).
type DeviceEndpoints interface {
	// Configured reports whether the platform's application ARN is set.
	Configured(p domain.Platform) bool
	// Register makes sure the token has one enabled endpoint carrying
	// customUserData and returns its ARN; domain.ErrTokenRejected when SNS
	// refuses the token, domain.ErrProviderUnavailable when it may be retried.
	Register(ctx context.Context, p domain.Platform, token, customUserData string) (string, error)
	DeleteEndpoint(ctx context.Context, endpointARN string) error
}

type deviceRequest struct {
	Platform string `json:"platform"`
	Token    string `json:"token"`
	App      string `json:"app"`
}

type deviceCreated struct {
	DeviceID string `json:"deviceId"`
}

// deviceView is a device in the user's profile; the token is masked.
type deviceView struct {
	DeviceID  string `json:"deviceId"`
	Platform  string `json:"platform"`
	App       string `json:"app,omitempty"`
	CreatedAt string `json:"createdAt"`
	Token     string `json:"token"`
}

// deviceList is the body of GET /v1/users/{userId}/devices.
type deviceList struct {
	Devices []deviceView `json:"devices"`
}

// Token limits: an APNs device token is 32 bytes, sent as 64 hex digits; an
// FCM registration token is an opaque printable string (about 160
// characters today), bounded here at maxFCMToken.
const maxFCMToken = 1024

var (
	apnsToken = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	appLabel  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
)

// validToken reports whether token has its platform's shape.
func validToken(p domain.Platform, token string) bool {
	if p == domain.PlatformFCM {
		if token == "" || len(token) > maxFCMToken {
			return false
		}
		return !strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' })
	}
	return apnsToken.MatchString(token)
}

// deviceID is "d" + 26 base32 characters of the hash of (platform, token):
// the same token on the same platform is the same device, whoever registers it.
func deviceID(p domain.Platform, token string) string {
	sum := sha256.Sum256([]byte("device\x00" + string(p) + "\x00" + token))
	return makeID("d", sum[:])
}

// validDeviceID admits the ids deviceID makes.
func validDeviceID(id string) bool {
	if len(id) != 27 || id[0] != 'd' {
		return false
	}
	for i := 1; i < len(id); i++ {
		if strings.IndexByte(idAlphabet, id[i]) < 0 {
			return false
		}
	}
	return true
}

// maskToken keeps the first and last four characters of a token.
func maskToken(t string) string {
	if len(t) <= 12 {
		return strings.Repeat("•", len(t))
	}
	return t[:4] + "…" + t[len(t)-4:]
}

func deviceViewsOf(ds []domain.Device) []deviceView {
	out := make([]deviceView, 0, len(ds))
	for _, d := range ds {
		out = append(out, deviceView{DeviceID: d.ID, Platform: string(d.Platform), App: d.App, CreatedAt: formatTime(d.CreatedAt), Token: maskToken(d.Token)})
	}
	return out
}

// endpointUserData is the CustomUserData of a device's endpoint: who it is
// for (ids only, no token). Another user taking the token changes it, which
// SNS answers with its attribute conflict.
func endpointUserData(userID, id string) string {
	b, _ := json.Marshal(map[string]string{"userId": userID, "deviceId": id})
	return string(b)
}

// maxOwnerRetries bounds the re-reads when the token's owner changes under a
// registration.
const maxOwnerRetries = 3

// createDevice registers a native device: its SNS platform endpoint, then the
// device under the user (taken from any user that held the token). The same
// (platform, token) again answers the same device: 201 the first time, 200
// after, one endpoint either way. The user's devices are bounded by
// domain.MaxDevicesPerUser: a new device beyond it evicts the oldest.
func (h *UsersHandler) createDevice(ctx context.Context, req *request) response {
	var dr deviceRequest
	userID, p := decodeUserBody(req, &dr)
	if p != nil {
		return problemResponse(p)
	}
	platform := domain.Platform(dr.Platform)
	if !platform.Valid() {
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_platform", "/platform", "platform must be apns, apns_sandbox or fcm"))
	}
	if !validToken(platform, dr.Token) {
		detail := "an APNs token is 64 hexadecimal characters"
		if platform == domain.PlatformFCM {
			detail = "an FCM token is 1 to 1024 printable ASCII characters without spaces"
		}
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_token", "/token", detail))
	}
	if dr.App != "" && !appLabel.MatchString(dr.App) {
		return problemResponse(fieldProblem(http.StatusBadRequest, "invalid_app", "/app", "app is 1 to 64 letters, digits, '.', '_' or '-'"))
	}
	if h.devices == nil || h.endpoints == nil || !h.endpoints.Configured(platform) {
		return problemResponse(fieldProblem(http.StatusUnprocessableEntity, "platform_not_configured", "/platform",
			"no SNS platform application is configured for "+string(platform)))
	}
	token := dr.Token
	if platform != domain.PlatformFCM {
		token = strings.ToLower(token) // hex: one spelling per token
	}
	id := deviceID(platform, token)

	dev := domain.Device{ID: id, Platform: platform, Token: token, App: dr.App, CreatedAt: h.now()}
	known := false
	switch prev, err := h.devices.GetDevice(ctx, userID, id); {
	case err == nil: // registered again: the same device, its label kept unless given
		known, dev.CreatedAt = true, prev.CreatedAt
		if dev.App == "" {
			dev.App = prev.App
		}
	case !errors.Is(err, domain.ErrNotFound):
		return h.storeError(ctx, "get device", err, nil)
	}
	arn, err := h.endpoints.Register(ctx, platform, token, endpointUserData(userID, id))
	if err != nil {
		return h.endpointError(ctx, err)
	}
	dev.EndpointARN = arn
	if err := h.saveDevice(ctx, userID, dev); err != nil {
		return h.storeError(ctx, "save device", err, nil)
	}
	status := http.StatusOK
	if !known {
		status = http.StatusCreated
		h.evictBeyondBound(ctx, userID)
	}
	h.log.InfoContext(ctx, "device saved", "userId", userID, "deviceId", id, "platform", platform, "outcome", http.StatusText(status))
	return response{status: status, body: &deviceCreated{DeviceID: id},
		headers: map[string]string{"Location": "/v1/users/" + userID + "/devices/" + id}}
}

// saveDevice takes the device from whichever user holds its token (a token
// moved to another user leaves the old one), re-reading the owner when it
// changes under the write.
func (h *UsersHandler) saveDevice(ctx context.Context, userID string, d domain.Device) error {
	var err error
	for range maxOwnerRetries {
		var owner string
		owner, err = h.devices.DeviceOwner(ctx, d.ID)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		if err = h.devices.SaveDevice(ctx, userID, owner, d); !errors.Is(err, domain.ErrConflict) {
			return err
		}
	}
	return err
}

// evictBeyondBound removes the user's oldest devices beyond
// domain.MaxDevicesPerUser, and their endpoints. It lists after the new
// device is saved, so that of registrations at once the last to list sees
// every device saved, and each evicts only devices with at least
// MaxDevicesPerUser newer ones: the newest MaxDevicesPerUser stay, whatever
// the order. A device goes once: its conditional delete has one winner, and
// only the winner deletes the endpoint (a failure there leaves an endpoint no
// device names, which a later registration of the token takes up again).
// Best effort: the new device is saved already; a failure leaves one device
// too many until the next registration.
func (h *UsersHandler) evictBeyondBound(ctx context.Context, userID string) {
	devices, err := h.devices.ListDevices(ctx, userID) // oldest first
	if err != nil {
		h.log.WarnContext(ctx, "evict devices: list failed", "userId", userID, "error", err)
		return
	}
	for _, d := range devices[:max(0, len(devices)-domain.MaxDevicesPerUser)] {
		err := h.devices.DeleteDevice(ctx, userID, d.ID)
		if errors.Is(err, domain.ErrNotFound) {
			continue // another registration evicted it
		}
		if err != nil {
			h.log.WarnContext(ctx, "evict device failed", "userId", userID, "deviceId", d.ID, "error", err)
			return
		}
		if err := h.endpoints.DeleteEndpoint(ctx, d.EndpointARN); err != nil {
			h.log.WarnContext(ctx, "evict device: delete endpoint failed", "userId", userID, "deviceId", d.ID, "error", err)
		}
		h.log.InfoContext(ctx, "device evicted", "userId", userID, "deviceId", d.ID, "outcome", "evicted")
	}
}

// endpointError answers a failed SNS registration call.
func (h *UsersHandler) endpointError(ctx context.Context, err error) response {
	switch {
	case errors.Is(err, domain.ErrTokenRejected):
		h.log.InfoContext(ctx, "device token rejected", "error", err, "outcome", "rejected")
		return problemResponse(fieldProblem(http.StatusUnprocessableEntity, "token_rejected", "/token", "the push service refused this token"))
	case errors.Is(err, domain.ErrProviderUnavailable):
		h.log.WarnContext(ctx, "register device", "error", err, "outcome", "unavailable")
		r := problemResponse(&Problem{Status: http.StatusServiceUnavailable, Code: "provider_unavailable",
			Detail: "the push service is unavailable; retry the request"})
		r.headers = map[string]string{"Retry-After": "1"}
		return r
	}
	return h.internalError(ctx, "register device", err)
}

// deleteDevice removes a user's device and its endpoint: 204, or 404 when
// the user has no such device (another user's device id included).
func (h *UsersHandler) deleteDevice(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	notFound := func() *Problem {
		return &Problem{Status: http.StatusNotFound, Code: "device_not_found", Parameter: "deviceId", Detail: "this user has no device with this id"}
	}
	id := req.PathParameters["deviceId"]
	if !validDeviceID(id) || h.devices == nil {
		return problemResponse(notFound())
	}
	d, err := h.devices.GetDevice(ctx, userID, id)
	if err != nil {
		return h.storeError(ctx, "get device", err, notFound)
	}
	// The endpoint first: if that fails the device stays and the caller
	// retries; the other way round would orphan the endpoint.
	if err := h.endpoints.DeleteEndpoint(ctx, d.EndpointARN); err != nil {
		return h.endpointError(ctx, errors.Join(domain.ErrProviderUnavailable, err))
	}
	if err := h.devices.DeleteDevice(ctx, userID, id); err != nil {
		return h.storeError(ctx, "delete device", err, notFound)
	}
	h.log.InfoContext(ctx, "device deleted", "userId", userID, "deviceId", id, "outcome", "deleted")
	return response{status: http.StatusNoContent}
}

// listDevices answers a user's devices, oldest first, tokens masked (an
// empty list for a user without any, profile or not).
func (h *UsersHandler) listDevices(ctx context.Context, req *request) response {
	userID, p := pathUserID(req)
	if p != nil {
		return problemResponse(p)
	}
	list := &deviceList{Devices: []deviceView{}}
	if h.devices != nil {
		ds, err := h.devices.ListDevices(ctx, userID)
		if err != nil {
			return h.storeError(ctx, "list devices", err, nil)
		}
		list.Devices = deviceViewsOf(ds)
	}
	return response{status: http.StatusOK, body: list}
}
