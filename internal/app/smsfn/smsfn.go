// Package smsfn wires the SMS function (SQS → SNS or AWS End User Messaging
// SMS, the other one its failover).
package smsfn

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/heraldhq/herald/internal/app"
	"github.com/heraldhq/herald/internal/app/workerfn"
	"github.com/heraldhq/herald/internal/channel"
	"github.com/heraldhq/herald/internal/failover"
	"github.com/heraldhq/herald/internal/sms"
	"github.com/heraldhq/herald/internal/worker"
)

// New wires the SMS function. SMS_PRIMARY_PROVIDER (sns, the default, or
// sms-voice) names the primary; SMS_VOICE_ORIGINATION_IDENTITY (an ARN)
// turns End User Messaging SMS on, and with it failover (issue 38): the
// provider that is not the primary is the secondary, at SEND_RATE_SECONDARY.
func New(d app.Deps) (*worker.Handler, error) {
	st, err := d.Stores()
	if err != nil {
		return nil, err
	}
	snsProvider := sms.New(sns.NewFromConfig(d.AWS, func(o *sns.Options) { o.Retryer = sms.Retryer() }), sms.Config{SenderID: d.Getenv("SMS_SENDER_ID")})
	var voice channel.Provider
	if identity := d.Getenv("SMS_VOICE_ORIGINATION_IDENTITY"); identity != "" {
		client := pinpointsmsvoicev2.NewFromConfig(d.AWS, func(o *pinpointsmsvoicev2.Options) { o.Retryer = sms.VoiceRetryer() })
		voice = sms.NewVoice(client, sms.VoiceConfig{OriginationIdentity: identity, ConfigurationSet: d.Getenv("SMS_VOICE_CONFIGURATION_SET")})
	}
	var (
		primary, secondary         channel.Provider
		primaryName, secondaryName string
	)
	switch p := d.Getenv("SMS_PRIMARY_PROVIDER"); p {
	case "", failover.SNS:
		primary, primaryName = snsProvider, failover.SNS
		if voice != nil {
			secondary, secondaryName = voice, failover.SMSVoice
		}
	case failover.SMSVoice:
		if voice == nil {
			return nil, fmt.Errorf("SMS_PRIMARY_PROVIDER %s needs SMS_VOICE_ORIGINATION_IDENTITY", p)
		}
		primary, primaryName, secondary, secondaryName = voice, failover.SMSVoice, snsProvider, failover.SNS
	default:
		return nil, fmt.Errorf("SMS_PRIMARY_PROVIDER %q: want %s or %s", p, failover.SNS, failover.SMSVoice)
	}
	fo, err := workerfn.Failover(d, st, primaryName, secondary, secondaryName)
	if err != nil {
		return nil, err
	}
	return workerfn.New(d, st, primary, fo)
}
