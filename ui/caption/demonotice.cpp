#include "caption/demonotice.h"

#include <QDesktopServices>
#include <QHBoxLayout>
#include <QPushButton>

#include "common/hintlabel.h"

namespace {
const char* kText =
    "<b>The demo model knows only coloured shapes</b> (circles, squares, triangles, stars and diamonds on plain, "
    "gradient or textured backgrounds): it cannot describe photographs. To caption photos, download the authors' released checkpoint "
    "<code>rf_model.pth</code> and vocabulary <code>demo_coco_tokens.pickle</code> from the drive linked in the "
    "README of <b>jchenghu/ExpansionNet_v2</b>, then load them in the Model box above with Config "
    "<b>official</b>.";
}  // namespace

DemoNotice::DemoNotice() : label_(new HintLabel(QString::fromUtf8(kText), HintLabel::Kind::Notice)) {
  setObjectName(QStringLiteral("demoNotice"));
  label_->setObjectName(QStringLiteral("demoNoticeText"));
  auto* open = new QPushButton(QStringLiteral("Open the ExpansionNet_v2 page"));
  open->setObjectName(QStringLiteral("openReleasePage"));
  open->setToolTip(QStringLiteral("Opens %1 in the browser; nothing is downloaded").arg(releasePage().toString()));
  connect(open, &QPushButton::clicked, this, [] { QDesktopServices::openUrl(releasePage()); });
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 6);
  row->addWidget(label_, 1);
  row->addWidget(open, 0, Qt::AlignVCenter);
}

QUrl DemoNotice::releasePage() { return QUrl(QStringLiteral("https://github.com/jchenghu/ExpansionNet_v2")); }

QString DemoNotice::text() const { return label_->text(); }
