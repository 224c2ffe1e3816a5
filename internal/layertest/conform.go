package layertest

// ParcelsConform is a realistic conform of Parcels as addresses, the one
// the conform benchmarks run: the site address split by prefixed_number
// and postfixed_street, the id cut out of the parcel number by a regexp,
// a district joined from two fields, a rewrite of the owner by a regexp
// replacement and a plain field.
const ParcelsConform = `
layer: addresses
number: {function: prefixed_number, field: site_address}
street: {function: postfixed_street, field: site_address}
id: {function: regexp, field: pin, pattern: '^0*(\d+)$'}
district: {function: join, fields: [township, zoning], separator: ' '}
region: {function: regexp, field: owner, pattern: '^OWNER (\d+)$', replace: 'owner $1'}
city: land_use
`
