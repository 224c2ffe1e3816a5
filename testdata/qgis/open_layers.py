"""Opens PostGIS layers with QGIS's own PostgreSQL provider, as QGIS's
browser does, and reports what QGIS sees (cmd/ingestd/qgis_test.go
asserts on it).

Input (stdin, JSON): {"conninfo": "dbname=... host=... port=... user=...",
"layers": [["schema", "name"], ...]}. Every layer is opened with NO key
in the URI (the browser's "add layer" on a view gives none), geometry
column geom. Output (stdout, JSON): per layer valid, geometry type, SRID,
feature count, fields (name, QGIS type name), the key QGIS chose and the
provider's messages; and the tables QGIS's browser lists (the provider
connection's tables(), every schema).

Run headless: QT_QPA_PLATFORM=offscreen.
"""

import json
import sys

from qgis.core import (
    QgsApplication,
    QgsDataSourceUri,
    QgsProviderRegistry,
    QgsVectorLayer,
    QgsWkbTypes,
)


def main():
    req = json.load(sys.stdin)
    app = QgsApplication([], False)
    app.initQgis()
    messages = []
    QgsApplication.messageLog().messageReceived.connect(
        lambda msg, tag, level: messages.append("%s: %s" % (tag, msg)))

    out = {"layers": [], "tables": []}
    for schema, name in req["layers"]:
        uri = QgsDataSourceUri(req["conninfo"])
        uri.setDataSource(schema, name, "geom")  # no key column: QGIS finds one or fails
        del messages[:]
        layer = QgsVectorLayer(uri.uri(False), name, "postgres")
        QgsApplication.processEvents()
        entry = {"schema": schema, "name": name, "valid": layer.isValid(), "uri": uri.uri(False)}
        if layer.isValid():
            pk = [layer.fields().at(i).name() for i in layer.dataProvider().pkAttributeIndexes()]
            entry.update({
                "geometry": QgsWkbTypes.displayString(layer.wkbType()),
                "srid": layer.crs().postgisSrid(),
                "count": layer.featureCount(),
                # Counted by iterating, as a user's attribute table does.
                "iterated": sum(1 for _ in layer.getFeatures()),
                "fields": [[f.name(), f.typeName()] for f in layer.fields()],
                "key": pk,
            })
        entry["messages"] = list(messages)
        out["layers"].append(entry)

    # The browser's listing: every relation of every schema, with its
    # geometry columns (QgsAbstractDatabaseProviderConnection.tables()).
    md = QgsProviderRegistry.instance().providerMetadata("postgres")
    conn = md.createConnection(req["conninfo"], {})
    for t in conn.tables():
        out["tables"].append({"schema": t.schema(), "name": t.tableName(),
                              "geometry": t.geometryColumn(), "flags": int(t.flags())})
    json.dump(out, sys.stdout)
    app.exitQgis()


if __name__ == "__main__":
    main()
