package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/catalog"
	"github.com/heraldhq/herald/internal/domain"
)

// fakeDevices is the device store: devices by user, owners by device id.
type fakeDevices struct {
	mu      sync.Mutex
	byUser  map[string]map[string]domain.Device
	owners  map[string]string
	onOwner func() // runs after DeviceOwner answers (to race the owner)
	// beforeSave runs before SaveDevice takes the lock (to line up
	// concurrent registrations).
	beforeSave func()
	evicted    map[string]int // device id → successful deletes
}

func newFakeDevices() *fakeDevices {
	return &fakeDevices{byUser: map[string]map[string]domain.Device{}, owners: map[string]string{}}
}

func (f *fakeDevices) DeviceOwner(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	owner, ok := f.owners[id]
	f.mu.Unlock()
	if f.onOwner != nil {
		f.onOwner()
	}
	if !ok {
		return "", domain.ErrNotFound
	}
	return owner, nil
}

func (f *fakeDevices) SaveDevice(_ context.Context, userID, prev string, d domain.Device) error {
	if f.beforeSave != nil {
		f.beforeSave()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owners[d.ID] != prev {
		return domain.ErrConflict
	}
	if prev != "" && prev != userID {
		delete(f.byUser[prev], d.ID)
	}
	if f.byUser[userID] == nil {
		f.byUser[userID] = map[string]domain.Device{}
	}
	f.byUser[userID][d.ID], f.owners[d.ID] = d, userID
	return nil
}

func (f *fakeDevices) ListDevices(_ context.Context, userID string) ([]domain.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Device
	for _, d := range f.byUser[userID] {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b domain.Device) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (f *fakeDevices) GetDevice(_ context.Context, userID, id string) (domain.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.byUser[userID][id]
	if !ok {
		return domain.Device{}, domain.ErrNotFound
	}
	return d, nil
}

func (f *fakeDevices) DeleteDevice(_ context.Context, userID, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.byUser[userID][id]; !ok {
		return domain.ErrNotFound
	}
	delete(f.byUser[userID], id)
	if f.evicted == nil {
		f.evicted = map[string]int{}
	}
	f.evicted[id]++
	if f.owners[id] == userID {
		delete(f.owners, id)
	}
	return nil
}

// fakeEndpoints is SNS: one endpoint per (platform, token).
type fakeEndpoints struct {
	mu         sync.Mutex
	configured map[domain.Platform]bool
	endpoints  map[string]string // platform/token → arn
	data       map[string]string // arn → custom user data
	deleted    []string
	err        error
}

func (f *fakeEndpoints) Configured(p domain.Platform) bool { return f.configured[p] }

func (f *fakeEndpoints) Register(_ context.Context, p domain.Platform, token, data string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	k := string(p) + "/" + token
	arn, ok := f.endpoints[k]
	if !ok {
		arn = fmt.Sprintf("arn:aws:sns:us-east-1:1:endpoint/%s/app/%d", p, len(f.endpoints))
		f.endpoints[k] = arn
	}
	f.data[arn] = data
	return arn, nil
}

func (f *fakeEndpoints) DeleteEndpoint(_ context.Context, arn string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, arn)
	for k, v := range f.endpoints {
		if v == arn {
			delete(f.endpoints, k)
		}
	}
	return nil
}

type deviceAPI struct {
	*testAPI
	devices   *fakeDevices
	endpoints *fakeEndpoints
	clock     time.Time
}

func newDeviceAPI(t *testing.T, configured ...domain.Platform) *deviceAPI {
	ta := &testAPI{store: newFakeStore()}
	da := &deviceAPI{testAPI: ta, devices: newFakeDevices(), clock: testNow,
		endpoints: &fakeEndpoints{configured: map[domain.Platform]bool{}, endpoints: map[string]string{}, data: map[string]string{}}}
	for _, p := range configured {
		da.endpoints.configured[p] = true
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var clockMu sync.Mutex
	ta.users = NewUsers(UsersDeps{Users: ta.store, PushSubscriptions: ta.store, Preferences: ta.store,
		Catalog: catalog.MustLoad(), Now: func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			da.clock = da.clock.Add(time.Second)
			return da.clock
		},
		Log:     log,
		Devices: da.devices, DeviceEndpoints: da.endpoints})
	ta.h = New(Deps{Log: log, Users: ta.users})
	return da
}

func (da *deviceAPI) register(t *testing.T, user, body string) (int, string, string) {
	t.Helper()
	resp := da.do(t, apiCall{route: "POST /v1/users/{userId}/devices", params: map[string]string{"userId": user}, body: body, caller: "svc"})
	if resp.StatusCode >= 300 {
		return resp.StatusCode, "", resp.Body
	}
	return resp.StatusCode, decodeBody[deviceCreated](t, resp.Body).DeviceID, resp.Body
}

var apnsTok = strings.Repeat("0a", 32)

func TestDeviceRegistrationIsIdempotentAndMovesTokens(t *testing.T) {
	da := newDeviceAPI(t, domain.Platforms...)
	body := fmt.Sprintf(`{"platform":"apns","token":%q,"app":"ios-main"}`, apnsTok)
	status, id, raw := da.register(t, "u1", body)
	if status != http.StatusCreated || !validDeviceID(id) {
		t.Fatalf("register = %d %s", status, raw)
	}
	// Same token (any case): same device, one endpoint.
	status, again, _ := da.register(t, "u1", fmt.Sprintf(`{"platform":"apns","token":%q}`, strings.ToUpper(apnsTok)))
	if status != http.StatusOK || again != id || len(da.endpoints.endpoints) != 1 {
		t.Fatalf("again = %d %s, %d endpoints", status, again, len(da.endpoints.endpoints))
	}
	// The same token on the sandbox is another device.
	if _, sb, _ := da.register(t, "u1", fmt.Sprintf(`{"platform":"apns_sandbox","token":%q}`, apnsTok)); sb == id {
		t.Error("sandbox device shares the production device's id")
	}
	// The profile lists them masked.
	da.store.users["u1"] = &domain.User{ID: "u1"}
	v := decodeBody[userView](t, da.do(t, apiCall{route: "GET /v1/users/{userId}", params: map[string]string{"userId": "u1"}, caller: "svc"}).Body)
	if v.Devices == nil || len(*v.Devices) != 2 || (*v.Devices)[0].DeviceID != id || (*v.Devices)[0].App != "ios-main" ||
		(*v.Devices)[0].Token != "0a0a…0a0a" || strings.Contains(fmt.Sprint(*v.Devices), apnsTok) {
		t.Fatalf("profile devices %+v", v.Devices)
	}
	// Another user registers the token: it leaves u1.
	if status, moved, _ := da.register(t, "u2", body); status != http.StatusCreated || moved != id {
		t.Fatalf("u2 = %d %s", status, moved)
	}
	if _, err := da.devices.GetDevice(context.Background(), "u1", id); err == nil {
		t.Error("u1 still has the moved token")
	}
	if !strings.Contains(da.endpoints.data[da.endpoints.endpoints["apns/"+apnsTok]], `"userId":"u2"`) {
		t.Errorf("endpoint data %v", da.endpoints.data)
	}
	// u1 cannot delete u2's device; u2 can, and the endpoint goes.
	del := func(user string) int {
		return da.do(t, apiCall{route: "DELETE /v1/users/{userId}/devices/{deviceId}", params: map[string]string{"userId": user, "deviceId": id}, caller: "svc"}).StatusCode
	}
	if got := del("u1"); got != http.StatusNotFound {
		t.Errorf("u1 deletes u2's device: %d", got)
	}
	if got := del("u2"); got != http.StatusNoContent || len(da.endpoints.deleted) != 1 {
		t.Errorf("u2 deletes: %d, endpoints deleted %v", got, da.endpoints.deleted)
	}
	if got := del("u2"); got != http.StatusNotFound {
		t.Errorf("delete again: %d", got)
	}
}

// The owner changes between the read and the write: the save reads again.
func TestDeviceRegistrationRetriesAMovedOwner(t *testing.T) {
	da := newDeviceAPI(t, domain.PlatformFCM)
	raced := false
	da.devices.onOwner = func() {
		if !raced {
			raced = true
			da.devices.mu.Lock()
			da.devices.owners[deviceID(domain.PlatformFCM, "tok")] = "u9"
			da.devices.mu.Unlock()
		}
	}
	if status, _, raw := da.register(t, "u1", `{"platform":"fcm","token":"tok"}`); status != http.StatusCreated {
		t.Fatalf("register = %d %s", status, raw)
	}
}

func TestDeviceBoundEvictsTheOldest(t *testing.T) {
	da := newDeviceAPI(t, domain.PlatformFCM)
	var ids []string
	for i := range domain.MaxDevicesPerUser + 1 {
		status, id, raw := da.register(t, "u1", fmt.Sprintf(`{"platform":"fcm","token":"tok-%d"}`, i))
		if status != http.StatusCreated {
			t.Fatalf("device %d: %d %s", i, status, raw)
		}
		ids = append(ids, id)
	}
	left, _ := da.devices.ListDevices(context.Background(), "u1")
	if len(left) != domain.MaxDevicesPerUser || left[0].ID != ids[1] {
		t.Errorf("%d devices left, oldest %s; want %d, the first evicted", len(left), left[0].ID, domain.MaxDevicesPerUser)
	}
	if len(da.endpoints.deleted) != 1 {
		t.Errorf("endpoints deleted %v, want the evicted one", da.endpoints.deleted)
	}
}

// Registrations at once each see fewer than the bound before they save
// (all of them list before any saves): the bound holds anyway, and each
// device beyond it is evicted once — its item and its endpoint.
func TestDeviceBoundHoldsUnderConcurrentRegistrations(t *testing.T) {
	da := newDeviceAPI(t, domain.PlatformFCM)
	const n = 25
	var lined sync.WaitGroup
	lined.Add(n)
	da.devices.beforeSave = func() { lined.Done(); lined.Wait() }
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if status, _, raw := da.register(t, "u1", fmt.Sprintf(`{"platform":"fcm","token":"tok-%d"}`, i)); status != http.StatusCreated {
				t.Errorf("device %d: %d %s", i, status, raw)
			}
		})
	}
	wg.Wait()
	left, _ := da.devices.ListDevices(context.Background(), "u1")
	if len(left) != domain.MaxDevicesPerUser {
		t.Fatalf("%d devices kept, want %d", len(left), domain.MaxDevicesPerUser)
	}
	if len(da.devices.evicted) != n-domain.MaxDevicesPerUser {
		t.Errorf("%d devices evicted, want %d", len(da.devices.evicted), n-domain.MaxDevicesPerUser)
	}
	for id, times := range da.devices.evicted {
		if times != 1 {
			t.Errorf("device %s evicted %d times", id, times)
		}
	}
	deleted := map[string]int{}
	for _, arn := range da.endpoints.deleted {
		deleted[arn]++
	}
	if len(da.endpoints.deleted) != n-domain.MaxDevicesPerUser || len(deleted) != len(da.endpoints.deleted) {
		t.Errorf("endpoints deleted %v, want each of the %d evicted once", da.endpoints.deleted, n-domain.MaxDevicesPerUser)
	}
}

// A user known only by devices (no profile stored): the device list and
// the profile both answer them, tokens masked.
func TestDevicesWithoutAProfile(t *testing.T) {
	da := newDeviceAPI(t, domain.PlatformAPNs)
	_, id, raw := da.register(t, "u3", fmt.Sprintf(`{"platform":"apns","token":%q}`, apnsTok))
	if id == "" {
		t.Fatalf("register: %s", raw)
	}
	resp := da.do(t, apiCall{route: "GET /v1/users/{userId}/devices", params: map[string]string{"userId": "u3"}, caller: "svc"})
	list := decodeBody[deviceList](t, resp.Body)
	if resp.StatusCode != http.StatusOK || len(list.Devices) != 1 || list.Devices[0].DeviceID != id || list.Devices[0].Token != "0a0a…0a0a" ||
		strings.Contains(resp.Body, apnsTok) {
		t.Fatalf("GET devices = %d %s", resp.StatusCode, resp.Body)
	}
	resp = da.do(t, apiCall{route: "GET /v1/users/{userId}", params: map[string]string{"userId": "u3"}, caller: "svc"})
	v := decodeBody[userView](t, resp.Body)
	if resp.StatusCode != http.StatusOK || v.UserID != "u3" || v.Devices == nil || len(*v.Devices) != 1 || strings.Contains(resp.Body, "updatedAt") {
		t.Fatalf("GET profile of a user with devices only = %d %s", resp.StatusCode, resp.Body)
	}
	// Neither profile nor devices: still 404 and an empty list.
	if resp := da.do(t, apiCall{route: "GET /v1/users/{userId}", params: map[string]string{"userId": "u4"}, caller: "svc"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET profile of nobody = %d %s", resp.StatusCode, resp.Body)
	}
	resp = da.do(t, apiCall{route: "GET /v1/users/{userId}/devices", params: map[string]string{"userId": "u4"}, caller: "svc"})
	if resp.StatusCode != http.StatusOK || resp.Body != `{"devices":[]}` {
		t.Errorf("GET devices of nobody = %d %s", resp.StatusCode, resp.Body)
	}
}

func TestDeviceValidation(t *testing.T) {
	da := newDeviceAPI(t, domain.PlatformAPNs, domain.PlatformFCM)
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"platform":"windows","token":"x"}`, 400, "invalid_platform"},
		{`{"platform":"APNS","token":"` + apnsTok + `"}`, 400, "invalid_platform"},
		{`{"platform":"apns","token":"` + apnsTok[:63] + `"}`, 400, "invalid_token"},
		{`{"platform":"apns","token":"` + strings.Repeat("zz", 32) + `"}`, 400, "invalid_token"},
		{`{"platform":"fcm","token":"` + strings.Repeat("x", 1025) + `"}`, 400, "invalid_token"},
		{`{"platform":"fcm","token":"has space"}`, 400, "invalid_token"},
		{`{"platform":"fcm","token":""}`, 400, "invalid_token"},
		{`{"platform":"fcm","token":"t","app":"../x"}`, 400, "invalid_app"},
		{`{"platform":"fcm","token":"t","extra":1}`, 400, "unknown_field"},
		{`{"platform":"apns_sandbox","token":"` + apnsTok + `"}`, 422, "platform_not_configured"},
	} {
		status, _, raw := da.register(t, "u1", tc.body)
		if status != tc.status || !strings.Contains(raw, `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.body, status, raw, tc.status, tc.code)
		}
	}
	if len(da.endpoints.endpoints) != 0 {
		t.Errorf("endpoints created for invalid requests: %v", da.endpoints.endpoints)
	}
	// SNS refuses or fails.
	da.endpoints.err = fmt.Errorf("create: %w", domain.ErrTokenRejected)
	if status, _, raw := da.register(t, "u1", `{"platform":"fcm","token":"t"}`); status != 422 || !strings.Contains(raw, "token_rejected") {
		t.Errorf("rejected: %d %s", status, raw)
	}
	da.endpoints.err = fmt.Errorf("create: %w", domain.ErrProviderUnavailable)
	resp := da.do(t, apiCall{route: "POST /v1/users/{userId}/devices", params: map[string]string{"userId": "u1"}, body: `{"platform":"fcm","token":"t"}`, caller: "svc"})
	if resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || !strings.Contains(resp.Body, "provider_unavailable") {
		t.Errorf("unavailable: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	// Without device wiring every platform is off.
	plain := newTestAPI(t)
	resp = plain.do(t, apiCall{route: "POST /v1/users/{userId}/devices", params: map[string]string{"userId": "u1"}, body: `{"platform":"fcm","token":"t"}`, caller: "svc"})
	if resp.StatusCode != 422 || !strings.Contains(resp.Body, "platform_not_configured") {
		t.Errorf("no wiring: %d %s", resp.StatusCode, resp.Body)
	}
}
