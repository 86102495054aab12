/* Unit tests for the XML extractor of AWS answers (backends/lambda/aws-xml.c), the percent
 * decoder of IAM's policy documents, the S3 bucket name rule and the account of
 * a caller ARN.  TAP lines; exits non-zero when any check fails. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "backends/lambda/aws-microvms.h"
#include "backends/lambda/aws-s3iam.h"
#include "backends/lambda/aws-xml.h"

static void
x(const char *xml, const char *tag, int want_rc, const char *want, const char *what)
{
	char out[64];
	int rc = aws_xml_text(xml, strlen(xml), tag, out, sizeof out);

	if (!check(rc == want_rc && strcmp(out, want) == 0, "%s", what))
		printf("# rc %d, out '%s'; want %d, '%s'\n", rc, out, want_rc, want);
}

static void
test_xml(void)
{
	const char *iam = "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"https://iam.amazonaws.com/"
	    "doc/2010-05-08/\"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The "
	    "role with name x cannot be found.</Message></Error><RequestId>r</RequestId>"
	    "</ErrorResponse>";
	char out[64];

	x(iam, "Code", 1, "NoSuchEntity", "IAM error: Code");
	x(iam, "Message", 1, "The role with name x cannot be found.", "IAM error: Message");
	x(iam, "Nope", 0, "", "a missing element: 0 and an empty output");
	x("<A><Co>x</Co><Code>y</Code></A>", "Code", 1, "y", "a longer or shorter name is "
	    "another element");
	x("<Code attr=\"1\">v</Code>", "Code", 1, "v", "attributes are skipped");
	x("<Code/>", "Code", 1, "", "an empty element is \"\"");
	x("<Code>a &amp; b &lt;c&gt; &quot;&apos;</Code>", "Code", 1, "a & b <c> \"'",
	    "the five entities");
	x("<Code>&#65;&#x42;&#xe9;</Code>", "Code", 1, "AB\xc3\xa9", "character references, "
	    "as UTF-8");
	x("<Code>&#0;</Code>", "Code", -1, "", "&#0; is refused");
	x("<Code>&#x110000;</Code>", "Code", -1, "", "a code point past U+10FFFF is refused");
	x("<Code>&bogus;</Code>", "Code", -1, "", "an unknown entity is refused");
	x("<Code>a & b</Code>", "Code", -1, "", "a bare & is refused");
	x("<Code><b>x</b></Code>", "Code", -1, "", "markup inside is refused");
	x("<Code><![CDATA[x]]></Code>", "Code", -1, "", "CDATA is refused");
	x("<Code>no end", "Code", -1, "", "no end tag is refused");
	x("<Code>0123456789012345678901234567890123456789012345678901234567890123</Code>",
	    "Code", -1, "", "a value that does not fit is refused, not cut");
	check(aws_xml_text("<Code>abc</Code>", 10, "Code", out, sizeof out) == -1,
	    "the input's length bounds the search (no read past it)");
	check(aws_xml_text_in("<Role><Arn>r</Arn></Role><Other><Arn>o</Arn></Other>", 52,
	    "Other", "Arn", out, sizeof out) == 1 && strcmp(out, "o") == 0,
	    "aws_xml_text_in looks inside the parent only");
	check(aws_xml_text_in("<Arn>o</Arn><Role></Role>", 25, "Role", "Arn", out,
	    sizeof out) == 0, "aws_xml_text_in: not outside the parent");
}

static void
test_pct(void)
{
	char a[] = "%7B%22Version%22%3A%222012-10-17%22%7D", b[] = "a+b%20c", c[] = "%4", d[] = "%00",
	    f[] = "a+b";

	check(aws_pct_decode(a, 0) == 0 && strcmp(a, "{\"Version\":\"2012-10-17\"}") == 0,
	    "a percent-encoded policy decodes");
	check(aws_pct_decode(b, 1) == 0 && strcmp(b, "a b c") == 0, "form: '+' is a space");
	check(aws_pct_decode(f, 0) == 0 && strcmp(f, "a+b") == 0, "not form: '+' stays");
	check(aws_pct_decode(c, 0) == -1, "a cut escape is refused");
	check(aws_pct_decode(d, 0) == -1, "%%00 is refused");
}

static void
test_names(void)
{
	char acct[13];

	check(aws_s3_bucket_name_ok("sbxtop-123456789012-us-west-2"), "the default bucket name");
	check(!aws_s3_bucket_name_ok("ab"), "too short");
	check(!aws_s3_bucket_name_ok("Upper"), "upper case");
	check(!aws_s3_bucket_name_ok("a.b.c"), "dots (TLS with virtual hosts)");
	check(!aws_s3_bucket_name_ok("-ab"), "a leading '-'");
	check(!aws_s3_bucket_name_ok("xn--abc"), "the xn-- prefix");
	check(!aws_s3_bucket_name_ok("abc-s3alias"), "the -s3alias suffix");
	check(awsmv_arn_account("arn:aws:iam::123456789012:user/x", acct) == 0 &&
	    strcmp(acct, "123456789012") == 0, "the account of a user ARN");
	check(awsmv_arn_account("arn:aws:sts::123456789012:assumed-role/r/s", acct) == 0,
	    "the account of an assumed-role ARN");
	check(awsmv_arn_account("arn:aws:iam::12345:user/x", acct) == -1, "a short account");
	check(awsmv_arn_account("nonsense", acct) == -1, "not an ARN");
}

int
main(void)
{
	test_xml();
	test_pct();
	test_names();
	return tap_end();
}
