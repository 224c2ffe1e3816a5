// Koop for ingestd's arcgis interop tests, started by scripts/koop.sh:
// the file-geojson provider serves testdata/arcgis/*.geojson as
// FeatureServer layers on loopback (each file's "metadata" sets its
// idField and a small maxRecordCount, so that paging is exercised).
'use strict';
const Koop = require('@koopjs/koop-core');
const geoservices = require('@koopjs/output-geoservices');
const fileGeoJSON = require('@koopjs/provider-file-geojson');

const port = Number(process.env.KOOP_PORT || 18182);
const dataDir = process.env.KOOP_DATA_DIR || 'testdata/arcgis';

// The pinned output-geoservices, not the one koop-core would pick.
const koop = new Koop({ logLevel: 'warn', skipGeoservicesRegistration: true });
koop.register(geoservices, { logger: koop.log });
koop.register(fileGeoJSON, { dataDir });
koop.server.listen(port, '127.0.0.1', () => {
  console.error(`koop: listening on 127.0.0.1:${port}, data from ${dataDir}`);
});
