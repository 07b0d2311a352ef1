package dynamo

import (
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heraldhq/herald/internal/domain"
)

// DecodeStreamNotification decodes a stream record's image into a
// notification; it returns (nil, nil) when the item is not a notification.
func DecodeStreamNotification(image map[string]events.DynamoDBAttributeValue) (*domain.Notification, error) {
	av, err := FromStreamImage(image)
	if err != nil {
		return nil, err
	}
	return DecodeNotification(av)
}

// FromStreamImage converts a Lambda stream image to SDK attribute values.
func FromStreamImage(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		av, err := fromStreamValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func fromStreamValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		list := v.List()
		out := make([]types.AttributeValue, len(list))
		for i, e := range list {
			av, err := fromStreamValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := FromStreamImage(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unsupported stream attribute type %v", v.DataType())
}

// DecodeStreamDelivery decodes a stream record's image into a delivery; it
// returns (nil, nil) when the item is not a delivery.
func DecodeStreamDelivery(image map[string]events.DynamoDBAttributeValue) (*domain.Delivery, error) {
	if len(image) == 0 || !strings.HasPrefix(streamString(image, "sk"), deliveryPrefix) || !strings.HasPrefix(streamString(image, "pk"), notificationPrefix) {
		return nil, nil
	}
	av, err := FromStreamImage(image)
	if err != nil {
		return nil, err
	}
	return decodeDelivery(av)
}

// DecodeStreamCampaign decodes a stream record's image into a campaign (its
// META item); it returns (nil, nil) when the item is not one.
func DecodeStreamCampaign(image map[string]events.DynamoDBAttributeValue) (*domain.Campaign, error) {
	if len(image) == 0 || streamString(image, "sk") != campaignSK || !strings.HasPrefix(streamString(image, "pk"), campaignPrefix) {
		return nil, nil
	}
	av, err := FromStreamImage(image)
	if err != nil {
		return nil, err
	}
	return decodeCampaign(av)
}

func streamString(image map[string]events.DynamoDBAttributeValue, name string) string {
	v, ok := image[name]
	if !ok || v.DataType() != events.DataTypeString {
		return ""
	}
	return v.String()
}
