package dynamo

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// Devices (native mobile push). A device lives in its user's partition
// (U#<user> / DEV#<deviceId>), so the worker's one query of the partition
// reads it with the profile; its owner item (DEVICE#<deviceId> / OWNER) says
// which user holds the token, so that a token registered by another user
// leaves the old one without a scan. The device id is the hash of (platform,
// token): both items are keyed by it.
const (
	devicePrefix      = "DEV#"
	deviceOwnerPrefix = "DEVICE#"
	deviceOwnerSK     = "OWNER"
)

// DeviceOwnerPK is the partition key of a device's owner item.
func DeviceOwnerPK(deviceID string) string { return deviceOwnerPrefix + deviceID }

type deviceItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Kind        string `dynamodbav:"kind"`
	ID          string `dynamodbav:"id"`
	Platform    string `dynamodbav:"platform"`
	Token       string `dynamodbav:"token"`
	App         string `dynamodbav:"app,omitempty"`
	EndpointARN string `dynamodbav:"endpointArn"`
	CreatedAt   string `dynamodbav:"createdAt"`
}

type deviceOwnerItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Kind        string `dynamodbav:"kind"`
	UserID      string `dynamodbav:"userId"`
	EndpointARN string `dynamodbav:"endpointArn"`
}

func (it *deviceItem) toDomain() domain.Device {
	return domain.Device{ID: it.ID, Platform: domain.Platform(it.Platform), Token: it.Token, App: it.App,
		EndpointARN: it.EndpointARN, CreatedAt: parseTime(it.CreatedAt)}
}

func decodeDevice(av map[string]types.AttributeValue) (domain.Device, error) {
	var it deviceItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return domain.Device{}, fmt.Errorf("unmarshal device: %w", err)
	}
	return it.toDomain(), nil
}

// DeviceOwner reads which user holds a device's token; domain.ErrNotFound
// when no user does.
func (s *Users) DeviceOwner(ctx context.Context, deviceID string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(DeviceOwnerPK(deviceID), deviceOwnerSK), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("get device owner %s: %w", deviceID, err)
	}
	if len(out.Item) == 0 {
		return "", fmt.Errorf("device %s: %w", deviceID, domain.ErrNotFound)
	}
	return stringAttr(out.Item, "userId"), nil
}

// SaveDevice stores d under userID and makes userID the token's owner, in
// one transaction that also removes the device from previousOwner (the owner
// DeviceOwner answered; "" when none). It fails with domain.ErrConflict when
// the owner changed since it was read (the caller reads again).
func (s *Users) SaveDevice(ctx context.Context, userID, previousOwner string, d domain.Device) error {
	dev, err := attributevalue.MarshalMap(deviceItem{
		PK: UserPK(userID), SK: devicePrefix + d.ID, Kind: "device", ID: d.ID, Platform: string(d.Platform),
		Token: d.Token, App: d.App, EndpointARN: d.EndpointARN, CreatedAt: formatTime(d.CreatedAt),
	})
	if err != nil {
		return fmt.Errorf("marshal device: %w", err)
	}
	owner, err := attributevalue.MarshalMap(deviceOwnerItem{
		PK: DeviceOwnerPK(d.ID), SK: deviceOwnerSK, Kind: "deviceOwner", UserID: userID, EndpointARN: d.EndpointARN,
	})
	if err != nil {
		return fmt.Errorf("marshal device owner: %w", err)
	}
	ownerPut := &types.Put{TableName: aws.String(s.table), Item: owner}
	if previousOwner == "" {
		ownerPut.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		ownerPut.ConditionExpression = aws.String("userId = :prev")
		ownerPut.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": str(previousOwner)}
	}
	writes := []types.TransactWriteItem{{Put: ownerPut}, {Put: &types.Put{TableName: aws.String(s.table), Item: dev}}}
	if previousOwner != "" && previousOwner != userID {
		writes = append(writes, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: key(UserPK(previousOwner), devicePrefix+d.ID),
		}})
	}
	err = s.transactContended(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	if failedCondition(err) {
		return fmt.Errorf("save device %s: owner changed: %w", d.ID, domain.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("save device %s: %w", d.ID, err)
	}
	return nil
}

// ListDevices reads a user's devices, oldest first.
func (s *Users) ListDevices(ctx context.Context, userID string) ([]domain.Device, error) {
	var out []domain.Device
	err := s.queryUserItems(ctx, userID, devicePrefix, func(av map[string]types.AttributeValue) error {
		d, err := decodeDevice(av)
		out = append(out, d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("devices of %s: %w", userID, err)
	}
	sortDevices(out)
	return out, nil
}

func sortDevices(ds []domain.Device) {
	sort.SliceStable(ds, func(i, j int) bool {
		if !ds[i].CreatedAt.Equal(ds[j].CreatedAt) {
			return ds[i].CreatedAt.Before(ds[j].CreatedAt)
		}
		return ds[i].ID < ds[j].ID
	})
}

// GetDevice reads one device of a user; domain.ErrNotFound if the user has
// no device with this id.
func (s *Users) GetDevice(ctx context.Context, userID, deviceID string) (domain.Device, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), devicePrefix+deviceID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return domain.Device{}, fmt.Errorf("get device %s: %w", deviceID, err)
	}
	if len(out.Item) == 0 {
		return domain.Device{}, fmt.Errorf("device %s: %w", deviceID, domain.ErrNotFound)
	}
	return decodeDevice(out.Item)
}

// DeleteDevice removes a user's device and, if the user still owns the
// token, its owner item; domain.ErrNotFound if the user has no such device.
func (s *Users) DeleteDevice(ctx context.Context, userID, deviceID string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(UserPK(userID), devicePrefix+deviceID),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if isConditionFailed(err) {
		return fmt.Errorf("device %s: %w", deviceID, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete device %s: %w", deviceID, err)
	}
	// The owner item goes only if it still names this user: the token may
	// have moved to another user meanwhile.
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(DeviceOwnerPK(deviceID), deviceOwnerSK),
		ConditionExpression:       aws.String("userId = :user"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":user": str(userID)},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("delete device owner %s: %w", deviceID, err)
	}
	return nil
}
