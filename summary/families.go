package summary

import (
	"strings"

	"github.com/strata-go/strata/summary/internal/factkey"
)

// Importance ranks a fact for eviction: when the ledger is over one of its
// caps, facts of lower importance are dropped first. Pinned facts and
// ImportanceIdentity facts are never dropped.
type Importance int

// The importance tiers, lowest first.
const (
	// ImportanceIncidental: keys the vocabulary does not know (chatter).
	ImportanceIncidental Importance = iota
	// ImportanceContext: dates, times, prices quoted, flight numbers,
	// statuses, other people's names — useful, but what chatter produces.
	ImportanceContext
	// ImportanceAmount: money the conversation is about (an amount, a
	// refund, a total, a balance, a fee).
	ImportanceAmount
	// ImportanceReference: order, case, ticket, reservation, booking,
	// tracking and invoice ids, SKUs and product codes.
	ImportanceReference
	// ImportanceStatement: what the user states about themselves or wants
	// (preferences, constraints, allergies, requests, goals) and decisions.
	ImportanceStatement
	// ImportanceContact: phone, email and postal addresses.
	ImportanceContact
	// ImportanceIdentity: who the user is (name, user or account id, date
	// of birth). Never evicted; every identity family is a slot, so there
	// are few of them.
	ImportanceIdentity
)

// String names the tier.
func (i Importance) String() string {
	switch i {
	case ImportanceIncidental:
		return "incidental"
	case ImportanceContext:
		return "context"
	case ImportanceAmount:
		return "amount"
	case ImportanceReference:
		return "reference"
	case ImportanceStatement:
		return "statement"
	case ImportanceContact:
		return "contact"
	case ImportanceIdentity:
		return "identity"
	}
	return "unknown"
}

// Family is a kind of fact: the keys that name the same kind of thing, how
// many values it holds and how much it matters. See FamilyOf.
type Family struct {
	// Name is the canonical key of the family, e.g. "phone" or "order_id".
	Name string
	// Slot marks a single-valued attribute (a person's name, phone, email,
	// delivery address, an order's status): the ledger holds one current
	// value, and a new value supersedes the old one, which becomes the
	// fact's Previous value.
	Slot bool
	// Importance is the family's eviction tier.
	Importance Importance
	// Category is the category facts of the family usually have.
	Category Category
	// Known is true for families of the vocabulary table, false for a key
	// the table does not know (its family is then its key without a
	// numeric suffix).
	Known bool
}

// vocabulary is the key vocabulary shared by the summarizers (extractive
// and LLM) and the merge: the first key of each row is the canonical key a
// summarizer should emit, the others are aliases that land on the same
// family. Multi-valued families number further values: order_id,
// order_id_2, … Keys are compared after NormalizeKey.
//
//	family            slot  tier        aliases
//	name              yes   identity    user_name, customer_name, full_name, caller_name, client_name, my_name
//	user_id           yes   identity    customer_id, member_id, membership_id, membership_number, loyalty_number
//	account_id        yes   identity    account_number
//	date_of_birth     yes   identity    dob, birthday, birth_date
//	first_name        yes   identity    given_name
//	last_name         yes   identity    surname, family_name
//	phone             yes   contact     phone_number, mobile, mobile_number, telephone, cell, cell_phone, contact_number, callback_number
//	email             yes   contact     email_address, e_mail
//	delivery_address  yes   contact     address, shipping_address, street_address, mailing_address
//	billing_address   yes   contact
//	home_address      yes   contact
//	preference        no    statement   preferences, contact_preference
//	constraint        no    statement   constraints, restriction, requirement
//	allergy           no    statement   allergies, dietary_restriction
//	request           no    statement   goal, wants, user_request
//	decision          no    statement   agreement, agreed
//	order_id          no    reference   order_number, order, order_no
//	case_id           no    reference   case_number, case, claim_id, claim_number
//	ticket_id         no    reference   ticket_number, ticket, support_ticket
//	reservation_id    no    reference   reservation_number, reservation, confirmation_code, confirmation_number, pnr
//	booking_id        no    reference   booking_number, booking, booking_reference
//	tracking_number   no    reference   tracking_id, tracking
//	invoice_id        no    reference   invoice_number, invoice
//	sku               no    reference   product_code, item_code, product_sku, part_number, model_number
//	amount            no    amount      payment_amount, payment, charge
//	credit            no    amount      voucher, compensation
//	deposit           no    amount
//	budget            no    amount
//	refund_amount     no    amount      refund
//	total             no    amount      total_amount
//	balance           no    amount
//	fee               no    amount
//	price             no    context     prices, fare, cost
//	date              no    context     dates
//	time              no    context     times
//	deadline          yes   context     due_date
//	flight_number     no    context     flight
//	passenger_name    no    context     passenger
//	agent_name        yes   context
//	status            yes   context     order_status
//
// Keys outside the table are classified by their ending: *_id, *_code,
// *_ref, *_reference, *_confirmation → reference; *_amount, *_total,
// *_fee, *_balance, *_refund → amount; *_preference, *_constraint,
// *_allergy → statement; *_phone, *_email, *_address → contact (each its
// own slot); *_status → a slot of its own (context); *_date, *_time,
// *_deadline → context; anything else is incidental, or a statement when
// its category is DECISION. Owner prefixes (user_, customer_, client_,
// caller_, my_) are dropped before the lookup ("customer_phone" is
// phone); update prefixes (new_, updated_, current_, latest_, corrected_)
// too ("new_phone" updates phone). Keys with a past prefix (old_,
// previous_, former_, prior_) name a superseded value: the merge records
// it as the slot's Previous value and never shows it as current.
var vocabulary = []struct {
	names []string
	slot  bool
	tier  Importance
	cat   Category
}{
	{[]string{"name", "user_name", "customer_name", "full_name", "caller_name", "client_name", "my_name"}, true, ImportanceIdentity, Entity},
	{[]string{"user_id", "customer_id", "member_id", "membership_id", "membership_number", "loyalty_number"}, true, ImportanceIdentity, Entity},
	{[]string{"account_id", "account_number"}, true, ImportanceIdentity, Entity},
	{[]string{"date_of_birth", "dob", "birthday", "birth_date"}, true, ImportanceIdentity, Entity},
	{[]string{"first_name", "given_name"}, true, ImportanceIdentity, Entity},
	{[]string{"last_name", "surname", "family_name"}, true, ImportanceIdentity, Entity},
	{[]string{"phone", "phone_number", "mobile", "mobile_number", "telephone", "cell", "cell_phone", "contact_number", "callback_number"}, true, ImportanceContact, Entity},
	{[]string{"email", "email_address", "e_mail"}, true, ImportanceContact, Entity},
	{[]string{"delivery_address", "address", "shipping_address", "street_address", "mailing_address"}, true, ImportanceContact, Entity},
	{[]string{"billing_address"}, true, ImportanceContact, Entity},
	{[]string{"home_address"}, true, ImportanceContact, Entity},
	{[]string{"preference", "preferences", "contact_preference"}, false, ImportanceStatement, Condition},
	{[]string{"constraint", "constraints", "restriction", "requirement"}, false, ImportanceStatement, Condition},
	{[]string{"allergy", "allergies", "dietary_restriction"}, false, ImportanceStatement, Condition},
	{[]string{"request", "goal", "wants", "user_request"}, false, ImportanceStatement, General},
	{[]string{"decision", "agreement", "agreed"}, false, ImportanceStatement, Decision},
	{[]string{"order_id", "order_number", "order", "order_no"}, false, ImportanceReference, Entity},
	{[]string{"case_id", "case_number", "case", "claim_id", "claim_number"}, false, ImportanceReference, Entity},
	{[]string{"ticket_id", "ticket_number", "ticket", "support_ticket"}, false, ImportanceReference, Entity},
	{[]string{"reservation_id", "reservation_number", "reservation", "confirmation_code", "confirmation_number", "pnr"}, false, ImportanceReference, Entity},
	{[]string{"booking_id", "booking_number", "booking", "booking_reference"}, false, ImportanceReference, Entity},
	{[]string{"tracking_number", "tracking_id", "tracking"}, false, ImportanceReference, Entity},
	{[]string{"invoice_id", "invoice_number", "invoice"}, false, ImportanceReference, Entity},
	{[]string{"sku", "product_code", "item_code", "product_sku", "part_number", "model_number"}, false, ImportanceReference, Entity},
	{[]string{"amount", "payment_amount", "payment", "charge"}, false, ImportanceAmount, Numeric},
	{[]string{"credit", "voucher", "compensation"}, false, ImportanceAmount, Numeric},
	{[]string{"deposit"}, false, ImportanceAmount, Numeric},
	{[]string{"budget"}, false, ImportanceAmount, Numeric},
	{[]string{"refund_amount", "refund"}, false, ImportanceAmount, Numeric},
	{[]string{"total", "total_amount"}, false, ImportanceAmount, Numeric},
	{[]string{"balance"}, false, ImportanceAmount, Numeric},
	{[]string{"fee"}, false, ImportanceAmount, Numeric},
	{[]string{"price", "prices", "fare", "cost"}, false, ImportanceContext, Numeric},
	{[]string{"date", "dates"}, false, ImportanceContext, Condition},
	{[]string{"time", "times"}, false, ImportanceContext, Condition},
	{[]string{"deadline", "due_date"}, true, ImportanceContext, Condition},
	{[]string{"flight_number", "flight"}, false, ImportanceContext, Entity},
	{[]string{"passenger_name", "passenger"}, false, ImportanceContext, Entity},
	{[]string{"agent_name"}, true, ImportanceContext, Entity},
	{[]string{"status", "order_status"}, true, ImportanceContext, State},
}

// familyIndex maps every normalised vocabulary key to its family; built
// once, read-only afterwards.
var familyIndex = func() map[string]Family {
	idx := map[string]Family{}
	for _, row := range vocabulary {
		fam := Family{Name: row.names[0], Slot: row.slot, Importance: row.tier, Category: row.cat, Known: true}
		for _, n := range row.names {
			idx[n] = fam
		}
	}
	return idx
}()

var (
	ownerPrefixes  = []string{"user_", "customer_", "client_", "caller_", "my_"}
	updatePrefixes = []string{"new_", "updated_", "current_", "latest_", "corrected_"}
	pastPrefixes   = []string{"old_", "previous_", "former_", "prior_"}
)

// FamilyOf returns the family of a fact key (any spelling; it is
// normalised first). A key with a numeric suffix belongs to the family of
// its stem ("price_26" is a price, "phone_2" a phone), and so does a key
// that embeds an identifier, a part with three digits or more
// ("gift_card_3481935_id" is a gift_card_id): keys named after each record
// of a collection are one kind of fact, under one family cap. See the
// vocabulary table in this file for the known families; a key the table
// does not know is classified by its ending, and otherwise forms a family
// of its own, named after its stem.
func FamilyOf(key string) Family {
	fam, _ := familyOf(NormalizeKey(key), General)
	return fam
}

// familyOf classifies a normalised key; past reports a key that names a
// superseded value ("old_phone"). cat is the fact's category, used for keys
// outside the vocabulary.
func familyOf(norm string, cat Category) (fam Family, past bool) {
	stem := factkey.StripEmbeddedIDs(factkey.StripNumber(norm))
	for _, p := range pastPrefixes {
		if rest, ok := strings.CutPrefix(stem, p); ok && rest != "" {
			stem, past = rest, true
			break
		}
	}
	if !past {
		for _, p := range updatePrefixes {
			if rest, ok := strings.CutPrefix(stem, p); ok && rest != "" {
				stem = rest
				break
			}
		}
	}
	if f, ok := familyIndex[stem]; ok {
		return f, past
	}
	for _, p := range ownerPrefixes {
		if rest, ok := strings.CutPrefix(stem, p); ok {
			if f, ok := familyIndex[rest]; ok {
				return f, past
			}
		}
	}
	return bySuffix(stem, cat), past
}

// bySuffix classifies a key outside the vocabulary by its ending.
func bySuffix(stem string, cat Category) Family {
	fam := Family{Name: stem, Importance: ImportanceIncidental, Category: cat}
	ends := func(parts ...string) bool {
		for _, p := range parts {
			if stem == p || strings.HasSuffix(stem, "_"+p) {
				return true
			}
		}
		return false
	}
	switch {
	case ends("phone", "email", "address"):
		fam.Slot, fam.Importance = true, ImportanceContact
	case ends("preference", "preferences", "constraint", "allergy"):
		fam.Importance = ImportanceStatement
	case ends("amount", "total", "fee", "balance", "refund"):
		fam.Importance = ImportanceAmount
	case ends("id", "code", "ref", "reference", "confirmation", "sku"):
		fam.Importance = ImportanceReference
	case ends("status"):
		fam.Slot, fam.Importance = true, ImportanceContext
	case ends("date", "time", "deadline"):
		fam.Importance = ImportanceContext
	case cat == Decision:
		fam.Importance = ImportanceStatement
	}
	return fam
}
