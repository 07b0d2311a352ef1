package events_test

import (
	"fmt"

	"github.com/heraldhq/herald/client/events"
)

// A consumer reads an event from its queue (the SQS message body a rule's
// target receives) and decodes the delivery it reports.
func Example() {
	body := []byte(`{"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"Delivery State Change",
	"source":"herald","account":"123456789012","time":"2026-01-02T03:04:05Z","region":"eu-west-1","resources":[],
	"detail":{"eventId":"dlv_2f1c","version":"1","notificationId":"n_01","type":"invoice_paid","caller":"billing",
	"userId":"u_42","channel":"email","status":"failed","reason":"exhausted","attempts":1,"at":"2026-01-02T03:04:05Z"}}`)
	ev, err := events.Parse(body)
	if err != nil {
		panic(err)
	}
	if ev.DetailType == events.DeliveryDetailType {
		d, err := ev.Delivery()
		if err != nil {
			panic(err)
		}
		fmt.Println(d.NotificationID, d.Channel, d.Status, d.Reason, d.EventID)
	}
	// Output: n_01 email failed exhausted dlv_2f1c
}
