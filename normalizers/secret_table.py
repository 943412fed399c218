"""The secret detectors as data: one row per kind of credential, with its pattern, trigger words and examples.

A row is a named regular expression (the ``regex`` module's dialect: variable-length lookbehind keeps
a key name or a command out of what is replaced), the literal trigger words one of which every match
contains or follows (a cheap substring screen decides whether the pattern runs at all), optionally a
pattern of JSON key names whose value is a secret whatever it looks like, and examples: a text and the
part of it that must disappear. Tests parametrize over this table, so a new row is tested without new
code. Trigger words written in lower case match in any case; a word with a capital matches as written.

Every example value here is FAKE and assembled from pieces, so no string that looks like a real key
is stored in the repository. The order of rows decides which name wins where two patterns match at one
place (the earlier row).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    pattern: str
    triggers: tuple[str, ...]
    examples: tuple[tuple[str, str], ...]  # (text holding the secret, the part that must disappear)
    keys: str | None = None  # JSON keys (whole name, any case) whose string or number value is redacted


# A command's own line up to the flag: no newline or shell separator between the tool and its flag.
_CMD = r"[^\n;|&]*?\s"
# The key names of the assignment rows, written once: an assignment, a quoted value after ``key:``,
# and a JSON key all use them.
_PASSWORD = r"password|passwd|pwd"
_SECRET = (r"secret|client[_-]?secret|secret[_-]?key|api[_-]?key|apikey|x-api-key|access[_-]?token"
           r"|auth[_-]?token|refresh[_-]?token|private[_-]?key")


def _assignment(words: str) -> str:
    """The value after ``word=``, ``word: "..."`` (JSON or YAML, escaped quotes too) or ``word: value``
    (six characters at least, so prose such as ``password: see below`` is kept)."""
    key = rf"(?<![A-Za-z])(?i:{words})"
    return (rf"(?<={key}\\*[\"']?\s*=\s*\\*[\"']?)(?![=\s])[^\s\"'\\]+"
            rf"|(?<={key}\\*[\"']?\s*:\s*\\*[\"'])[^\"'\\\n]+"
            rf"|(?<={key}\\*[\"']\s*:\s*)-?\d+\b"
            rf"|(?<={key}\\*[\"']?\s*:\s*)(?!\\*[\"']|(?:true|false|null)\b)[^\s\"',{{}}\[\]]{{6,}}")


DETECTORS: tuple[Detector, ...] = (
    # PEM and PGP private key blocks; a block with no END line is redacted to the end of the text
    Detector("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
             r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", ("PRIVATE KEY",),
             (("-----BEGIN " + "RSA PRIVATE KEY-----\n" + "m" * 40 + "\n-----END RSA PRIVATE KEY-----", "m" * 40),)),
    Detector("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", ("sk-",),
             (("sk-" + "ant-" + "api03-" + "b" * 30, "b" * 30),)),
    Detector("openai_api_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", ("sk-",),
             (("sk-" + "a" * 40, "a" * 40), ("sk-" + "proj-" + "A1b2" * 8, "A1b2" * 8))),
    Detector("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA"),
             (("AK" + "IA" + "Z" * 16, "Z" * 16),)),
    Detector("aws_secret_access_key", r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b",
             ("aws_secret", "awssecret"), (("aws_secret_access_key=" + "c" * 40, "c" * 40),)),
    Detector("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
             ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
             (("gh" + "p_" + "d" * 36, "d" * 36), ("github" + "_pat_" + "e" * 30, "e" * 30))),
    Detector("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", ("xox",),
             (("xo" + "xb-" + "1" * 12 + "-" + "f" * 10, "f" * 10),)),
    Detector("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+", ("hooks.slack",),
             (("https://hooks.slack.com/" + "services/T000/B000/" + "g" * 12, "g" * 12),)),
    Detector("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", ("AIza",), (("AI" + "za" + "h" * 35, "h" * 35),)),
    Detector("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", ("eyJ",),
             (("ey" + "J" + "i" * 10 + ".ey" + "J" + "j" * 10 + "." + "k" * 12, "k" * 12),)),
    # the password runs to the last @ before the host (a password may hold @); the user may be empty
    Detector("url_password", r"(?<=\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s/]+(?=@[^\s@/]+)", ("://",),
             (("postgres://admin:" + "hunter" + "2hunter" + "@db.example.org/app", "2hunter"),
              ("redis://:" + "rEd1s" + "Pw@cache.example.org:6379/0", "rEd1sPw"),
              ("https://bob:" + "pw" + "Q7@git.example.org/repo.git", "pwQ7"))),
    # DB_PASSWORD=..., password: ..., "password": "..." (a JSON key), pwd='...', password=abc (any length)
    Detector("password_assignment", _assignment(_PASSWORD), ("passw", "pwd"),
             (("pass" + "word = " + "n" * 12, "n" * 12), ("DB_PASS" + "WORD=" + "hunter2env", "hunter2env"),
              ('{"pass' + 'word": "' + "Zq9w" + '"}', "Zq9w"), ("login with pass" + "word=" + "x7Q9z", "x7Q9z"),
              ('{\\"pass' + 'word\\": \\"' + "Esc4p3d" + '\\"}', "Esc4p3d")),
             keys=rf"[\w.-]*(?:{_PASSWORD})"),
    # Stripe secret and restricted keys (publishable pk_ keys are public by design) and webhook secrets
    Detector("stripe_key", r"(?<![A-Za-z0-9])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
             ("k_live_", "k_test_", "whsec_"),
             (("sk_" + "live_" + "51Hx" + "S" * 24, "S" * 24), ("rk_" + "live_" + "R" * 24, "R" * 24),
              ("export-sk_" + "live_" + "N" * 20 + ".txt", "N" * 20))),
    Detector("huggingface_token", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}", ("hf_",),
             (("hf_" + "H" * 34, "H" * 34),)),
    Detector("gitlab_token", r"(?<![A-Za-z0-9])gl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_-]{20,}",
             ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-"), (("gl" + "pat-" + "G" * 20, "G" * 20),)),
    # Azure storage and Service Bus connection strings, SAS tokens (in a connection string or a URL)
    Detector("azure_key", r"(?<=(?i:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/]{20,}={0,2}",
             ("accountkey=", "sharedaccesskey="),
             (("DefaultEndpointsProtocol=https;AccountName=acct;Account" + "Key=" + "K" * 86 + "==;", "K" * 86),
              ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccess" + "Key=" + "B" * 44, "B" * 44))),
    Detector("azure_sas", r"(?<=(?i:SharedAccessSignature)=)[^\s;\"'<>]+|(?<=[?&]sig=)[A-Za-z0-9%+/=]{16,}",
             ("sharedaccesssignature=", "sig="),
             (("BlobEndpoint=https://a.blob.core.windows.net/;SharedAccess" + "Signature=sv=2022-11-02&sig="
               + "S1g" * 12, "S1g" * 12),
              ("https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&" + "sig=" + "Qz" * 20, "Qz" * 20))),
    # Authorization: Bearer/Basic/Token <credential> (a header in any quoting), and a bare "Bearer <token>"
    Detector("authorization_header",
             r"(?<=\b(?i:authorization)\\*[\"']?\s*[:=]\s*\\*[\"']?(?i:bearer|basic|token)\s+)[A-Za-z0-9._~+/-]{8,}=*"
             r"|(?<=\b(?i:bearer)\s+)[A-Za-z0-9._~+/-]{20,}=*", ("authorization", "bearer"),
             (("Authorization: Bearer " + "opaq" + "ue" * 10, "opaq" + "ue" * 10),
              ("curl -H 'Authorization: Basic " + "YWRtaW46" + "c2VjcmV0" + "'", "YWRtaW46c2VjcmV0"),
              ('{"Authorization": "Bearer ' + "T0k" * 8 + '"}', "T0k" * 8))),
    # credentials on a command line: mysql -pX / -p X / --password X, sshpass -p X, curl -u user:pw,
    # and any --password/--token flag followed by a value
    Detector("cli_password",
             rf"(?<=\b(?:mysql(?:dump|admin|import|show|check)?|mariadb(?:-dump)?|sshpass)\b{_CMD}-p ?)"
             r"(?!-)[^\s\"'\\;|&]+"
             rf"|(?<=\bcurl\b{_CMD}(?:-u|--user)[= ]?\s*\\*[\"']?[^\s:\"'\\]*:)[^\s\"'\\]+"
             r"|(?<=\s--(?:password|passwd|token|api-key|secret)[= ]\s*\\*[\"']?)(?!-)[^\s\"'\\]+",
             ("mysql", "mariadb", "sshpass", "curl", "--pass", "--token", "--api-key", "--secret"),
             (("mysql -u root -p" + "S3cr" + "et db", "S3cret"), ("mysql -h db -u root -p " + "Pw9x" + " app", "Pw9x"),
              ("mysql --password " + "Pw8y" + " app", "Pw8y"), ("curl -u admin:" + "Cu" + "rlPw https://x", "CurlPw"),
              ('{"command":"mysqldump -u r -p' + "Js0n" + 'Pw db"}', "Js0nPw"))),
    # NAME_PASS=..., export GITHUB_TOKEN=..., env DB_PASS=... (an upper-case variable named like a credential)
    Detector("env_credential",
             r"(?<=\b[A-Z0-9_]*(?:PASS|PASSWD|PWD|TOKEN|SECRET|KEY|AUTH|CREDENTIALS?)\s*=\s*[\"']?)(?![$\"'])"
             r"[^\s\"'`;&|\\]+", ("PASS", "PWD", "TOKEN", "SECRET", "KEY", "AUTH", "CREDENTIAL"),
             (("env DB_" + "PASS=" + "Pa55" + " ./run.sh", "Pa55"), ("export X_" + "TOKEN=" + "tok" * 5, "tok" * 5))),
    # api_key=..., "secret": "...", client_secret: "...", "apiKey": 12345 (a JSON key)
    Detector("secret_assignment", _assignment(_SECRET),
             ("secret", "api_key", "apikey", "api-key", "access_token", "accesstoken", "access-token",
              "auth_token", "authtoken", "auth-token", "refresh_token", "refreshtoken", "refresh-token",
              "private_key", "privatekey", "private-key"),
             (('{"api' + '_key": "' + "Ak" * 6 + '"}', "Ak" * 6), ('{"sec' + 'ret": ' + "987654" + "}", "987654"),
              ("client_" + "secret: '" + "Cs" * 5 + "'", "Cs" * 5)),
             keys=rf"[\w.-]*(?:{_SECRET})"),
)

# E-mail addresses are found by pattern; cards, IBANs and phone numbers by checks (see ``pii``).
EMAIL = r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
