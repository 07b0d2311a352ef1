package dynamo

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/internal/domain"
)

// SetPreference sets one (type, channel) override in the user's preferences
// item without touching the others (a one-path MergePreferences).
func (s *Users) SetPreference(ctx context.Context, userID, notificationType string, c domain.Channel, enabled bool) error {
	if _, err := s.MergePreferences(ctx, userID, map[string]map[domain.Channel]*bool{notificationType: {c: &enabled}}); err != nil {
		return fmt.Errorf("set preference %s/%s: %w", notificationType, c, err)
	}
	return nil
}
